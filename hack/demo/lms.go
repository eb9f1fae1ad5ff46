package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// demoLMS is a simulated LMS plus a tiny integrator app, served together on one port:
// the LMS at /start, /auth and /jwks; the integrator's Launch URL at /app/launch.
type demoLMS struct {
	sim    *lmssim.LMS
	base   string
	ltiop  string
	apiKey string
	srv    *http.Server
	hooks  *hookLog // the demo integrator's webhook (notices.go)
}

const registrationName = "lms-simulator"

func startDemoLMS(listen, ltiopURL, apiKey string) (*demoLMS, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("LMS simulator: %w", err)
	}
	base := "http://" + ln.Addr().String()
	sim, err := lmssim.New(base, "demo-client", "demo-deployment")
	if err != nil {
		return nil, err
	}
	sim.ToolLoginURL, sim.ToolRedirectURI = ltiopURL+paths.Login, ltiopURL+paths.Launch
	sim.EnableServices(ltiopURL + paths.KeySet(registrationName)) // rosters, grades and deep linking, verified with its key set
	// Platform notices (notices.go).
	sim.EnablePNS(nil)
	d := &demoLMS{sim: sim, base: base, ltiop: ltiopURL, apiKey: apiKey, hooks: newHookLog()}
	mux := http.NewServeMux()
	mux.Handle("/", sim.Handler())
	mux.HandleFunc("GET /app/launch", d.appLaunch)
	mux.HandleFunc("POST "+webhookPath, d.appWebhook)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

func (d *demoLMS) launchURL() string { return d.base + "/app/launch" }

// register creates the PlatformRegistration of the simulator.
func (d *demoLMS) register(ctx context.Context, k8s client.Client, cfg *config.Config) error {
	return k8s.Create(ctx, &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: registrationName},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(d.base), ClientID: d.sim.ClientID, Name: "LMS simulator",
			AuthenticationEndpoint: ltiv1.EndpointURL(d.base + lmssim.AuthPath),
			AccesstokenEndpoint:    ltiv1.EndpointURL(d.base + lmssim.TokenPath),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: d.base + lmssim.JWKSPath},
		},
	})
}

// launchOnce performs a real launch as a browser would and returns its ltik.
func (d *demoLMS) launchOnce(ctx context.Context) (string, error) {
	return d.launchWith(ctx, "user=demo-teacher")
}

// launchWith is launchOnce with the simulator's /start query (user, message).
func (d *demoLMS) launchWith(ctx context.Context, query string) (string, error) {
	jar, _ := cookiejar.New(nil)
	var ltik string
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/app/launch" {
			ltik = req.URL.Query().Get("ltik")
			return http.ErrUseLastResponse
		}
		return nil
	}}
	// Wait until the registration is usable: the login answers with the LMS's form.
	var page string
	for i := 0; ; i++ {
		res, err := getResponse(ctx, c, d.base+lmssim.StartPath+"?"+query)
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

func (d *demoLMS) idToken(ctx context.Context, ltik string) ([]byte, error) {
	return d.api(ctx, ltik, http.MethodGet, "/api/idtoken", nil, http.StatusOK)
}

// api calls ltiop's integrator API with the launch's ltik and returns indented JSON.
func (d *demoLMS) api(ctx context.Context, ltik, method, path string, payload any, want int) ([]byte, error) {
	return d.apiAs(ctx, "LTIK-AUTH-V2 "+d.apiKey+":"+ltik, method, path, payload, want)
}

// apiAs is api with another Authorization header (a notice key's).
func (d *demoLMS) apiAs(ctx context.Context, authorization, method, path string, payload any, want int) ([]byte, error) {
	var rd io.Reader
	if payload != nil {
		b, _ := json.Marshal(payload)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, d.ltiop+path, rd)
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

// services shows what the launch's services give: a roster page, a grade posted to the
// launch's line item, and that line item's results.
func (d *demoLMS) services(ctx context.Context, ltik string) (roster, results []byte, err error) {
	if roster, err = d.api(ctx, ltik, http.MethodGet, "/api/memberships?limit=3", nil, http.StatusOK); err != nil {
		return nil, nil, err
	}
	lineItem := d.base + lmssim.LineItemsPath + "/1/lineitem?" + lmssim.TypeIDQuery
	scores := "/api/lineitems/" + url.PathEscape(lineItem) + "/scores"
	score := map[string]any{"userId": "demo-teacher", "scoreGiven": 87, "scoreMaximum": 100,
		"activityProgress": "Completed", "gradingProgress": "FullyGraded", "comment": "Posted by the ltiop demo"}
	if _, err = d.api(ctx, ltik, http.MethodPost, scores, score, http.StatusNoContent); err != nil {
		return nil, nil, err
	}
	results, err = d.api(ctx, ltik, http.MethodGet, scores+"?userId=demo-teacher", nil, http.StatusOK)
	return roster, results, err
}

// groups shows the first page of the course's groups (the simulator serves 36 in 2 sets).
func (d *demoLMS) groups(ctx context.Context, ltik string) ([]byte, error) {
	return d.api(ctx, ltik, http.MethodGet, "/api/groups?limit=3", nil, http.StatusOK)
}

var appPage = template.Must(template.New("app").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ltiop demo: launched</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}
pre{background:#f5f5f5;padding:1rem;overflow:auto;border-radius:4px}</style></head>
<body><h1>Launched through ltiop</h1>
<p>This page is the integrator's Launch URL. It received an <code>ltik</code> and asked ltiop for the ID token with <code>GET /api/idtoken</code>:</p>
{{if .Error}}<p><strong>{{.Error}}</strong></p>{{else}}<pre>{{.Token}}</pre>{{end}}
</body></html>`))

// appLaunch is the demo integrator's Launch URL: it shows the launch's ID token.
func (d *demoLMS) appLaunch(w http.ResponseWriter, r *http.Request) {
	data := map[string]string{}
	if tok, err := d.idToken(r.Context(), r.URL.Query().Get("ltik")); err != nil {
		data["Error"] = err.Error()
	} else {
		data["Token"] = string(tok)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = appPage.Execute(w, data)
}
