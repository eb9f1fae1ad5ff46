package integratorsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// App is the integrator's small web app in tool mode, served together with the LMS its
// users come from: the LMS at /start, /auth and /jwks; the app's Launch URL at
// /app/launch and its webhook at /app/hooks/lti. It launches as a browser would and calls
// ltiop's integrator API with the launch's ltik, or with a notice's key.
type App struct {
	LMS    *lmssim.LMS
	Base   string // where the LMS and the app are served
	LTIOP  string // ltiop's public URL
	APIKey string
	Hook   *Webhook // the app's webhook (notices.go)
}

// LaunchPath and WebhookPath are the app's Launch URL and webhook, under Base.
const (
	LaunchPath  = "/app/launch"
	WebhookPath = "/app/hooks/lti"
)

// Handler serves the LMS and the app.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", a.LMS.Handler())
	mux.HandleFunc("GET "+LaunchPath, a.appLaunch)
	mux.Handle("POST "+WebhookPath, a.Hook)
	return mux
}

// LaunchURL is the app's Launch URL (ltiop's launchUrl).
func (a *App) LaunchURL() string { return a.Base + LaunchPath }

// WebhookURL is the app's webhook (ltiop's notice webhook URL).
func (a *App) WebhookURL() string { return a.Base + WebhookPath }

// Launch performs a real launch as a browser would and returns its ltik.
func (a *App) Launch(ctx context.Context) (string, error) {
	return a.LaunchWith(ctx, "user=demo-teacher")
}

// LaunchWith is Launch with the simulator's /start query (user, message).
func (a *App) LaunchWith(ctx context.Context, query string) (string, error) {
	jar, _ := cookiejar.New(nil)
	var ltik string
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == LaunchPath {
			ltik = req.URL.Query().Get("ltik")
			return http.ErrUseLastResponse
		}
		return nil
	}}
	// Wait until the registration is usable: the login answers with the LMS's form.
	var page string
	for i := 0; ; i++ {
		res, err := getResponse(ctx, c, a.Base+lmssim.StartPath+"?"+query)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Request.URL.Path == lmssim.AuthPath && res.StatusCode == http.StatusOK {
			page = string(b)
			break
		}
		if i == 100 {
			return "", fmt.Errorf("login failed: %s", b)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	action, form, ok := lmssim.ParseAutoSubmit(page)
	if !ok {
		return "", errors.New("the LMS answered without a form")
	}
	res, err := postForm(ctx, c, action, form)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if ltik == "" {
		return "", fmt.Errorf("launch failed (HTTP %d): %s", res.StatusCode, body)
	}
	return ltik, nil
}

// IDToken reads the launch's ID token: GET /api/idtoken.
func (a *App) IDToken(ctx context.Context, ltik string) ([]byte, error) {
	return a.API(ctx, ltik, http.MethodGet, "/api/idtoken", nil, http.StatusOK)
}

// API calls ltiop's integrator API with the launch's ltik and returns indented JSON.
func (a *App) API(ctx context.Context, ltik, method, path string, payload any, want int) ([]byte, error) {
	return a.APIAs(ctx, "LTIK-AUTH-V2 "+a.APIKey+":"+ltik, method, path, payload, want)
}

// APIAs is API with another Authorization header (a notice key's).
func (a *App) APIAs(ctx context.Context, authorization, method, path string, payload any, want int) ([]byte, error) {
	var rd io.Reader
	if payload != nil {
		b, _ := json.Marshal(payload)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, a.LTIOP+path, rd)
	req.Header.Set("Authorization", authorization)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, path, res.StatusCode, body)
	}
	if len(body) == 0 {
		return nil, nil
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		return body, nil
	}
	return pretty.Bytes(), nil
}

// Services shows what the launch's services give: a roster page, a grade posted to the
// launch's line item, and that line item's results.
func (a *App) Services(ctx context.Context, ltik string) (roster, results []byte, err error) {
	if roster, err = a.API(ctx, ltik, http.MethodGet, "/api/memberships?limit=3", nil, http.StatusOK); err != nil {
		return nil, nil, err
	}
	lineItem := a.Base + lmssim.LineItemsPath + "/1/lineitem?" + lmssim.TypeIDQuery
	scores := "/api/lineitems/" + url.PathEscape(lineItem) + "/scores"
	score := map[string]any{"userId": "demo-teacher", "scoreGiven": 87, "scoreMaximum": 100,
		"activityProgress": "Completed", "gradingProgress": "FullyGraded", "comment": "Posted by the ltiop demo"}
	if _, err = a.API(ctx, ltik, http.MethodPost, scores, score, http.StatusNoContent); err != nil {
		return nil, nil, err
	}
	results, err = a.API(ctx, ltik, http.MethodGet, scores+"?userId=demo-teacher", nil, http.StatusOK)
	return roster, results, err
}

// Groups shows the first page of the course's groups (the simulator serves 36 in 2 sets).
func (a *App) Groups(ctx context.Context, ltik string) ([]byte, error) {
	return a.API(ctx, ltik, http.MethodGet, "/api/groups?limit=3", nil, http.StatusOK)
}

var appPage = template.Must(template.New("app").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ltiop demo: launched</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}
pre{background:#f5f5f5;padding:1rem;overflow:auto;border-radius:4px}</style></head>
<body><h1>Launched through ltiop</h1>
<p>This page is the integrator's Launch URL. It received an <code>ltik</code> and asked ltiop for the ID token with <code>GET /api/idtoken</code>:</p>
{{if .Error}}<p><strong>{{.Error}}</strong></p>{{else}}<pre>{{.Token}}</pre>{{end}}
</body></html>`))

// appLaunch is the app's Launch URL: it shows the launch's ID token.
func (a *App) appLaunch(w http.ResponseWriter, r *http.Request) {
	data := map[string]string{}
	if tok, err := a.IDToken(r.Context(), r.URL.Query().Get("ltik")); err != nil {
		data["Error"] = err.Error()
	} else {
		data["Token"] = string(tok)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = appPage.Execute(w, data)
}
