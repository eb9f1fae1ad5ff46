package integratorsim

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
	"net/url"
	"strings"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/toolsim"
)

// Platform is the integrator in platform mode: a learning platform whose small web app
// (/start, /launch, /deep-link, /content-items and the platform data API under
// /ltiop-data, which feeds the roster and grade services ltiop serves) launches an
// external LTI tool through ltiop. The tool is simulators/toolsim, a
// real LTI 1.3 tool that checks everything it receives, served on a port of its own; it
// registers itself with ltiop by dynamic registration. The requests and answers of
// ltiop's API are written here from docs/platform-mode.md, not taken from ltiop's code.
type Platform struct {
	Tool     *toolsim.Tool
	toolSim  http.Handler // the tool's own endpoints
	ToolBase string
	Base     string // the integrator's platform app
	ltiop    string
	apiKey   string
	servers  []*http.Server
	// ClientID is the tool's client_id: set it once the registration is Ready.
	ClientID string
	// Data is the integrator's platform data API (simulators/datasim): the course's
	// members, its line item, and the scores tools post through ltiop.
	Data       *datasim.API
	LineItemID string
}

const (
	// ToolRegistrationName is the ToolRegistration the tool gets (config/samples has example-tool).
	ToolRegistrationName = "demo-tool"
	demoUser             = "student-1"
	demoTeacher          = "teacher-1"
	demoCourseID         = "bio-101"

	roleLearner       = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
	roleInstructor    = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
	claimNRPS         = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	claimAGS          = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	claimContext      = "https://purl.imsglobal.org/spec/lti/claim/context"
	claimCustom       = "https://purl.imsglobal.org/spec/lti/claim/custom"
	claimReturn       = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"
	claimRoles        = "https://purl.imsglobal.org/spec/lti/claim/roles"
	claimResourceLink = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
)

// StartPlatform serves the sample tool on toolLn (reached at toolBase) and the platform
// app on appLn (at base). dataKey is the decoded webhook secret ltiop signs its data API
// calls with. It closes the listeners when it fails.
func StartPlatform(toolLn, appLn net.Listener, toolBase, base, ltiopURL, apiKey string, dataKey []byte) (*Platform, error) {
	p := &Platform{ToolBase: toolBase, Base: base, ltiop: ltiopURL, apiKey: apiKey}
	var err error
	// The rest of the tool's configuration is only known once ltiop registered it.
	if p.Tool, err = toolsim.New(toolsim.Config{RedirectURI: p.ToolBase + toolsim.LaunchPath}); err != nil {
		toolLn.Close()
		appLn.Close()
		return nil, err
	}
	p.toolSim = p.Tool.Handler()
	p.Data = datasim.New(dataKey)
	p.Data.AddMembers(demoCourseID, course.Title,
		datasim.Member{UserID: demoUser, Name: "Sam Student", Roles: []string{roleLearner}},
		datasim.Member{UserID: "student-2", Name: "Alex Learner", Roles: []string{roleLearner}},
		datasim.Member{UserID: demoTeacher, Name: "Terry Teacher", Roles: []string{roleInstructor}})
	p.LineItemID = p.Data.AddLineItem(demoCourseID, ToolRegistrationName, datasim.LineItem{Label: "Week 1 quiz", ScoreMaximum: 10, ResourceLinkID: "week-1-quiz"})

	toolMux := http.NewServeMux()
	toolMux.Handle("/", p.toolSim)
	toolMux.HandleFunc("POST "+toolsim.LaunchPath, p.toolLaunch)
	toolMux.HandleFunc("POST "+toolsim.DeepLinkLaunchPath, p.toolLaunch)

	app := http.NewServeMux()
	app.HandleFunc("GET /{$}", p.home)
	app.HandleFunc("GET /start", p.start)
	app.HandleFunc("GET /launch", p.launchPage)
	app.HandleFunc("GET /deep-link", p.deepLinkPage)
	app.HandleFunc("GET /content-items", p.contentItems)
	app.HandleFunc("POST /content-items", p.contentItems)
	app.Handle("POST /ltiop-data/", p.Data.Handler())

	for ln, h := range map[net.Listener]http.Handler{toolLn: toolMux, appLn: app} {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		p.servers = append(p.servers, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	return p, nil
}

// LaunchURL is the app's launch page (ltiop's platformLaunchUrl).
func (p *Platform) LaunchURL() string { return p.Base + "/launch" }

// DeepLinkingURL is the app's deep-linking page (platformDeepLinkingUrl).
func (p *Platform) DeepLinkingURL() string { return p.Base + "/deep-link" }

// DeepLinkingReturnURL is the app's deep-linking return page (platformDeepLinkingReturnUrl).
func (p *Platform) DeepLinkingReturnURL() string { return p.Base + "/content-items" }

// DataURL is the base URL of the app's platform data API (platformData.url).
func (p *Platform) DataURL() string { return p.Base + "/ltiop-data" }

// Close stops the tool and the app.
func (p *Platform) Close() {
	for _, s := range p.servers {
		_ = s.Close()
	}
}

// Register has the tool register itself by dynamic registration, pre-approved, as
// ToolRegistration demo-tool. The registration is Ready a moment later: set ClientID then.
func (p *Platform) Register(ctx context.Context) error {
	var started struct {
		URL string `json:"url"`
	}
	if err := p.api(ctx, "/api/tools/registrations", map[string]any{"initiationUrl": p.ToolBase + "/register",
		"preApproved": true, "toolId": ToolRegistrationName}, &started); err != nil {
		return err
	}
	if _, err := p.Tool.Register(ctx, started.URL, p.ToolBase, []string{string(ltiv1.ScopeNRPSMembership),
		string(ltiv1.ScopeAGSLineItem), string(ltiv1.ScopeAGSScore)}, true); err != nil {
		return fmt.Errorf("the demo tool's dynamic registration: %w", err)
	}
	return nil
}

// PlatformLaunch is what a programmatic launch saw.
type PlatformLaunch struct {
	Launch        toolsim.Launch
	Scope         string        // of the tool's access token
	Introspection []byte        // POST /api/tokens/introspect's answer, indented
	Members       int           // in the roster the tool read
	Score         datasim.Score // the score the integrator's data API received
}

// LaunchOnce launches the tool as a browser would, from the platform app's /start
// to the tool's verified launch, then has the tool get an access token, introspects it
// and reads the course roster with it.
func (p *Platform) LaunchOnce(ctx context.Context) (*PlatformLaunch, error) {
	before := len(p.Tool.Launches())
	browser := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // every hop is checked
	}}

	// GET /start: POST /api/launches; the registration may need a moment to reach ltiop's
	// registry, so a tool not found or not ready yet is retried.
	var page string
	for i := 0; ; i++ {
		status, body, err := get(ctx, browser, p.Base+"/start")
		if err != nil {
			return nil, fmt.Errorf("the platform app's /start: %w", err)
		}
		if status == http.StatusOK {
			page = body
			break
		}
		if i == 100 {
			return nil, fmt.Errorf("the platform app's /start answered HTTP %d: %s", status, trimText(body))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	action, form, ok := lmssim.ParseAutoSubmit(page)
	if !ok || action != p.ToolBase+toolsim.LoginPath {
		return nil, fmt.Errorf("the /start page has no form to the tool's login: %s", trimText(page))
	}
	// The tool's login initiation answers with its authentication request to ltiop.
	res, err := postForm(ctx, browser, action, form)
	authorize, err := redirect("the tool's login", res, err)
	if err != nil {
		return nil, err
	}
	// ltiop's authorization endpoint sends the browser to the integrator's launch page.
	res, err = getResponse(ctx, browser, authorize)
	launchPage, err := redirect("ltiop's authorization endpoint", res, err)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(launchPage, p.LaunchURL()+"?") {
		return nil, fmt.Errorf("ltiop's authorization endpoint redirected to %s, not to the platform launch page", trimText(launchPage))
	}
	// The launch page answers the payload and posts the id_token to the tool.
	status, page, err := get(ctx, browser, launchPage)
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("the platform launch page: HTTP %d %v: %s", status, err, trimText(page)) //nolint:errorlint // err may be nil here (a status failure); %v prints it as <nil>
	}
	if action, form, ok = lmssim.ParseAutoSubmit(page); !ok || action != p.ToolBase+toolsim.LaunchPath {
		return nil, fmt.Errorf("the platform launch page has no form to the tool's launch: %s", trimText(page))
	}
	if res, err = postForm(ctx, browser, action, form); err != nil {
		return nil, fmt.Errorf("posting the id_token to the tool: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := p.Tool.WaitLaunch(wctx, before+1)
	if err != nil {
		return nil, fmt.Errorf("the tool recorded no launch: %w", err)
	}
	if !l.OK {
		return nil, fmt.Errorf("the tool refused the launch: %s", l.Err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the tool's launch page answered HTTP %d: %s", res.StatusCode, trimText(string(body)))
	}
	out := &PlatformLaunch{Launch: l}

	// The tool's service call: an access token from ltiop's token endpoint (client
	// credentials with a JWT signed by the tool), introspected by the integrator.
	tr, status, err := p.Tool.RequestToken(ctx, []string{string(ltiv1.ScopeNRPSMembership), string(ltiv1.ScopeAGSScore)})
	if err != nil {
		return nil, fmt.Errorf("the tool's token request: %w", err)
	}
	if status != http.StatusOK || tr.AccessToken == "" {
		return nil, fmt.Errorf("the tool's token request: HTTP %d: %s %s", status, tr.Error, tr.ErrorDescription)
	}
	out.Scope = tr.Scope
	var raw json.RawMessage
	if err := p.api(ctx, "/api/tokens/introspect", map[string]string{"token": tr.AccessToken}, &raw); err != nil {
		return nil, err
	}
	var in struct {
		Active   bool   `json:"active"`
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("POST /api/tokens/introspect: %w", err)
	}
	if !in.Active || in.ClientID != p.ClientID {
		return nil, fmt.Errorf("POST /api/tokens/introspect: the tool's token is not active for client %s: %s", p.ClientID, raw)
	}
	out.Introspection = indent(raw)

	// The roster the launch pointed the tool to, read with that token.
	nrps, _ := l.Claims[claimNRPS].(map[string]any)
	rosterURL, _ := nrps["context_memberships_url"].(string)
	if rosterURL == "" {
		return nil, errors.New("the launch carried no NRPS claim")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rosterURL, nil)
	req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
	req.Header.Set("Accept", nrpsMediaType)
	if res, err = http.DefaultClient.Do(req); err != nil {
		return nil, fmt.Errorf("reading the roster: %w", err)
	}
	defer res.Body.Close()
	var roster struct {
		Members []map[string]any `json:"members"`
	}
	if err := json.NewDecoder(res.Body).Decode(&roster); err != nil || res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the roster: HTTP %d %v", res.StatusCode, err) //nolint:errorlint // err may be nil here (a status failure); %v prints it as <nil>
	}
	out.Members = len(roster.Members)

	// A score for the learner, posted to the line item of the launch's AGS claim: ltiop
	// checks it and passes it to the integrator's data API.
	ags, _ := l.Claims[claimAGS].(map[string]any)
	lineItem, _ := ags["lineitem"].(string)
	if lineItem == "" {
		return nil, errors.New("the launch carried no AGS line item")
	}
	score := fmt.Sprintf(`{"userId":%q,"scoreGiven":9,"scoreMaximum":10,"comment":"Well done","activityProgress":"Completed","gradingProgress":"FullyGraded","timestamp":%q}`,
		demoUser, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	ans, err := p.Tool.CallService(ctx, http.MethodPost, lineItem+"/scores", tr.AccessToken, "", "application/vnd.ims.lis.v1.score+json", []byte(score))
	if err != nil || ans.Status != http.StatusOK {
		return nil, fmt.Errorf("posting the score: HTTP %d %v: %s", ans.Status, err, trimText(string(ans.Body))) //nolint:errorlint // err may be nil here (a status failure); %v prints it as <nil>
	}
	scores := p.Data.Scores(demoCourseID, p.LineItemID)
	if len(scores) == 0 {
		return nil, errors.New("the integrator's data API received no score")
	}
	out.Score = scores[len(scores)-1]
	return out, nil
}

// Summary is what the demo prints about the launch.
func (r *PlatformLaunch) Summary() string {
	c := r.Launch.Claims
	course, _ := c[claimContext].(map[string]any)
	nrps, _ := c[claimNRPS].(map[string]any)
	ags, _ := c[claimAGS].(map[string]any)
	custom, _ := json.Marshal(c[claimCustom])
	var b strings.Builder
	for _, row := range [][2]string{
		{"message type", r.Launch.MessageType},
		{"sub", r.Launch.Subject},
		{"name", fmt.Sprint(c["name"])},
		{"client id", fmt.Sprint(c["aud"])},
		{"course", fmt.Sprintf("%v (%v)", course["title"], course["id"])},
		{"custom", string(custom)},
		{"NRPS endpoint", elideGrant(fmt.Sprint(nrps["context_memberships_url"]))},
		{"AGS line item", elideGrant(fmt.Sprint(ags["lineitem"]))},
		{"tool's verdict", "accepted: signature (platform JWKS), iss, aud, exp/iat, nonce, state, deployment"},
	} {
		fmt.Fprintf(&b, "  %-15s %s\n", row[0], row[1])
	}
	return b.String()
}

// elideGrant shortens a service URL of ltiop's for printing: its sealed grant is long.
func elideGrant(u string) string {
	before, after, ok := strings.Cut(u, "/lti/platform/services/")
	if !ok {
		return u
	}
	if _, rest, ok := strings.Cut(after, "/"); ok {
		return before + "/lti/platform/services/<sealed grant>/" + rest
	}
	return u
}

// get fetches url with c and returns the status and the body.
func get(ctx context.Context, c *http.Client, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b), err
}

// redirect checks that a browser hop answered 302 and returns where to.
func redirect(what string, res *http.Response, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || loc == "" {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return "", fmt.Errorf("%s answered HTTP %d instead of a redirect: %s", what, res.StatusCode, trimText(string(b)))
	}
	return loc, nil
}

func trimText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

func indent(raw []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return raw
	}
	return b.Bytes()
}

// apiError is an error answer of ltiop's API.
type apiError struct {
	path   string
	status int
	body   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("POST %s: HTTP %d: %s", e.path, e.status, trimText(e.body))
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

// api posts body as JSON to ltiop's platform-mode API with the API key and decodes the
// answer into out.
func (p *Platform) api(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.ltiop+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.apiKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := apiClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if res.StatusCode/100 != 2 {
		return &apiError{path: path, status: res.StatusCode, body: string(data)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	return nil
}

// The platform app's pages.

var platformPage = template.Must(template.New("platform").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ltiop demo platform: {{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}
pre{background:#f5f5f5;padding:1rem;overflow:auto;border-radius:4px}</style></head>
<body><h1>{{.Title}}</h1>
{{with .Text}}<p>{{.}}</p>{{end}}
{{with .Error}}<p><strong>{{.}}</strong></p>{{end}}
{{with .Items}}<ul>{{range .}}<li>{{.Title}} ({{.Type}}){{if eq .Type "link"}}: <a href="{{.URL}}">{{.URL}}</a>{{else if .URL}}: {{.URL}}{{end}}</li>{{end}}</ul>{{end}}
{{with .JSON}}<pre>{{.}}</pre>{{end}}
{{with .Links}}<ul>{{range .}}<li><a href="{{.Href}}">{{.Text}}</a></li>{{end}}</ul>{{end}}
{{.Form}}
</body></html>`))

type link struct{ Href, Text string }

type pageData struct {
	Title, Text, Error, JSON string
	Items                    any
	Links                    []link
	// Form is the auto-submitting form ltiop built with html/template.
	Form template.HTML
}

func render(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = platformPage.Execute(w, d)
}

// fail shows an API error; ltiop's answer keeps its status, anything else is a 502.
func fail(w http.ResponseWriter, title string, err error) {
	status := http.StatusBadGateway
	var ae *apiError
	if errors.As(err, &ae) {
		status = ae.status
	}
	render(w, status, pageData{Title: title, Error: err.Error(), Links: homeLinks})
}

var homeLinks = []link{
	{"/start", "Launch the demo tool (a resource link, as the learner Sam Student)"},
	{"/start?deepLinking=1", "Pick content from the demo tool (deep linking, as the teacher Terry Teacher)"},
}

func (p *Platform) home(w http.ResponseWriter, _ *http.Request) {
	render(w, http.StatusOK, pageData{Title: "The integrator as a learning platform",
		Text:  "This app launches the demo LTI tool through ltiop's platform mode (ToolRegistration " + ToolRegistrationName + ").",
		Links: homeLinks})
}

// start begins a launch: POST /api/launches, then the browser posts the login initiation
// to the tool.
func (p *Platform) start(w http.ResponseWriter, r *http.Request) {
	req := map[string]any{"toolId": ToolRegistrationName, "user": demoUser,
		"resourceLink": map[string]string{"id": "week-1-quiz", "title": "Week 1 quiz"}}
	if r.URL.Query().Get("deepLinking") != "" {
		req = map[string]any{"toolId": ToolRegistrationName, "user": demoTeacher,
			"messageType": toolsim.DeepLinkingRequest, "data": json.RawMessage(`{"module":"week-2"}`)}
	}
	var lp struct {
		ToolID   string `json:"toolId"`
		LoginURL string `json:"loginUrl"`
		Form     string `json:"form"`
	}
	if err := p.api(r.Context(), "/api/launches", req, &lp); err != nil {
		fail(w, "The launch could not start", err)
		return
	}
	render(w, http.StatusOK, pageData{Title: "Launching " + lp.ToolID + "…",
		Text: "POST /api/launches answered the tool's login initiation; your browser posts it to " + lp.LoginURL + ".",
		Form: template.HTML(lp.Form)}) // #nosec G203: built by ltiop with html/template
}

// course is the course every demo launch comes from.
var course = &launchContext{ID: demoCourseID, Label: "BIO101", Title: "Introduction to Biology",
	Type: []string{"http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"}}

// launchPage is the platform launch page (platformLaunchUrl): ltiop sends the browser
// here with ?payload=; the page says who launches from where and posts the id_token.
func (p *Platform) launchPage(w http.ResponseWriter, r *http.Request) {
	p.answer(w, r, launchData{
		User: &launchUser{Roles: []string{roleLearner}, Name: "Sam Student", GivenName: "Sam",
			FamilyName: "Student", Email: "sam.student@example.edu"},
		Custom: map[string]string{"chapter": "1", "difficulty": "easy"},
	})
}

// deepLinkPage is the platform deep-linking page (platformDeepLinkingUrl).
func (p *Platform) deepLinkPage(w http.ResponseWriter, r *http.Request) {
	multiple := true
	p.answer(w, r, launchData{
		User: &launchUser{Roles: []string{roleInstructor}, Name: "Terry Teacher", GivenName: "Terry",
			FamilyName: "Teacher", Email: "terry.teacher@example.edu"},
		DeepLinking: &deepLinkingSettings{AcceptTypes: []string{"ltiResourceLink", "link"},
			AcceptPresentationDocumentTargets: []string{"iframe", "window"}, AcceptMultiple: &multiple,
			Title: "Week 2 activities", Data: "week-2"},
	})
}

func (p *Platform) answer(w http.ResponseWriter, r *http.Request, d launchData) {
	d.Payload = r.URL.Query().Get("payload")
	d.Context = course
	d.Presentation = &presentation{DocumentTarget: "window", ReturnURL: p.Base + "/"}
	d.Platform = &platformInfo{GUID: "ltiop-demo-platform", Name: "ltiop demo platform"}
	// The roster and the grades: served by ltiop (true, or an object without URLs), fed by
	// the platform data API.
	d.Services = map[string]any{"namesAndRoles": true, "assignmentAndGrades": map[string]string{"lineItemId": p.LineItemID}}
	var ans struct {
		Form        string `json:"form"`
		RedirectURI string `json:"redirectUri"`
	}
	if err := p.api(r.Context(), "/api/launches/idtoken", d, &ans); err != nil {
		fail(w, "The launch could not continue", err)
		return
	}
	render(w, http.StatusOK, pageData{Title: "Sending you to the tool…",
		Text: "POST /api/launches/idtoken minted the id_token; your browser posts it to " + ans.RedirectURI + ".",
		Form: template.HTML(ans.Form)}) // #nosec G203: built by ltiop with html/template
}

// contentItems is the deep-linking return page (platformDeepLinkingReturnUrl).
func (p *Platform) contentItems(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := p.api(r.Context(), "/api/launches/content-items", map[string]string{"payload": r.FormValue("payload")}, &raw); err != nil {
		fail(w, "The selected content could not be read", err)
		return
	}
	var res struct {
		ToolID       string `json:"toolId"`
		ContentItems []struct {
			Type  string `json:"type"`
			Title string `json:"title"`
			URL   string `json:"url"`
		} `json:"contentItems"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		fail(w, "The selected content could not be read", fmt.Errorf("POST /api/launches/content-items: %w", err))
		return
	}
	b := indent(raw)
	render(w, http.StatusOK, pageData{Title: fmt.Sprintf("%s returned %d content item(s)", res.ToolID, len(res.ContentItems)),
		Text:  "POST /api/launches/content-items verified the tool's deep-linking response:",
		Items: res.ContentItems, JSON: string(b), Links: homeLinks})
}

const nrpsMediaType = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"

// The sample tool's pages: toolsim verifies and records the launch; the tool then shows
// what it verified, or, for a deep-linking launch, offers content to return.

var toolPage = template.Must(template.New("tool").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo tool</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;background:#f4f8ff}
th{text-align:left;padding-right:1rem;vertical-align:top}</style></head>
<body><h1>Demo tool: {{.Heading}}</h1>
<p>This is the sample LTI 1.3 tool. It verified the id_token ltiop posted here against ltiop's
platform key set (signature, issuer, audience, times, nonce, state, deployment).</p>
<table>{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{if .ReturnURL}}<form action="{{.ReturnURL}}" method="post"><input type="hidden" name="JWT" value="{{.JWT}}">
<p>It offers: {{range .Items}}<br>{{.title}} ({{.type}}){{end}}</p>
<button type="submit">Add to the course</button></form>{{end}}
{{with .Back}}<p><a href="{{.}}">Back to the platform</a></p>{{end}}
</body></html>`))

func (p *Platform) toolLaunch(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	_ = r.ParseForm()
	rec := &bufferedResponse{header: http.Header{}}
	p.toolSim.ServeHTTP(rec, r)
	var l toolsim.Launch
	launches := p.Tool.Launches()
	for i := len(launches) - 1; i >= 0; i-- {
		if launches[i].State == r.PostForm.Get("state") {
			l = launches[i]
			break
		}
	}
	if !l.OK {
		rec.writeTo(w)
		return
	}
	c := l.Claims
	course, _ := c[claimContext].(map[string]any)
	link, _ := c[claimResourceLink].(map[string]any)
	pres, _ := c[claimReturn].(map[string]any)
	nrps, _ := c[claimNRPS].(map[string]any)
	var roles []string
	if rs, ok := c[claimRoles].([]any); ok {
		for _, r := range rs {
			roles = append(roles, fmt.Sprint(r))
		}
	}
	rows := [][2]string{{"Message type", l.MessageType}, {"User", fmt.Sprintf("%v (%s)", c["name"], l.Subject)},
		{"Roles", strings.Join(roles, ", ")}}
	if course != nil {
		rows = append(rows, [2]string{"Course", fmt.Sprintf("%v (%v)", course["title"], course["id"])})
	}
	if link != nil {
		rows = append(rows, [2]string{"Resource link", fmt.Sprintf("%v (%v)", link["title"], link["id"])})
	}
	if custom, ok := c[claimCustom]; ok {
		b, _ := json.Marshal(custom)
		rows = append(rows, [2]string{"Custom", string(b)})
	}
	if nrps != nil {
		rows = append(rows, [2]string{"Roster (NRPS)", fmt.Sprint(nrps["context_memberships_url"])})
	}
	d := map[string]any{"Heading": "launch verified", "Rows": rows, "Back": pres["return_url"]}
	if l.MessageType == toolsim.DeepLinkingRequest {
		items := []map[string]any{
			{"type": "ltiResourceLink", "title": "Week 2 quiz", "url": p.ToolBase + toolsim.LaunchPath,
				"custom": map[string]any{"quiz": "2"}},
			{"type": "link", "title": "The LTI 1.3 specification", "url": "https://www.imsglobal.org/spec/lti/v1p3"},
		}
		jwt, ret, err := p.Tool.DeepLinkingResponse(l, items)
		if err != nil {
			http.Error(w, "the demo tool cannot answer: "+err.Error(), http.StatusInternalServerError)
			return
		}
		d["Heading"], d["ReturnURL"], d["JWT"], d["Items"], d["Back"] = "pick content", ret, jwt, items, nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = toolPage.Execute(w, d)
}

// bufferedResponse keeps toolsim's answer until the demo tool knows whether it adds a page.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	if b.status == 0 {
		b.status = http.StatusOK
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// getResponse sends a GET bound to ctx; the caller closes the body.
func getResponse(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// postForm is (*http.Client).PostForm bound to ctx; the caller closes the body.
func postForm(ctx context.Context, c *http.Client, u string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

// The body of POST /api/launches/idtoken (docs/platform-mode.md), as far as the app fills it.
type launchData struct {
	Payload      string               `json:"payload"`
	User         *launchUser          `json:"user"`
	Context      *launchContext       `json:"context,omitempty"`
	Custom       map[string]string    `json:"custom,omitempty"`
	Presentation *presentation        `json:"presentation,omitempty"`
	Platform     *platformInfo        `json:"platform,omitempty"`
	Services     map[string]any       `json:"services,omitempty"`
	DeepLinking  *deepLinkingSettings `json:"deepLinking,omitempty"`
}

type launchUser struct {
	Roles      []string `json:"roles"`
	Name       string   `json:"name,omitempty"`
	GivenName  string   `json:"givenName,omitempty"`
	FamilyName string   `json:"familyName,omitempty"`
	Email      string   `json:"email,omitempty"`
}

type launchContext struct {
	ID    string   `json:"id"`
	Label string   `json:"label,omitempty"`
	Title string   `json:"title,omitempty"`
	Type  []string `json:"type,omitempty"`
}

type presentation struct {
	DocumentTarget string `json:"documentTarget,omitempty"`
	ReturnURL      string `json:"returnUrl,omitempty"`
}

type platformInfo struct {
	GUID string `json:"guid"`
	Name string `json:"name,omitempty"`
}

type deepLinkingSettings struct {
	AcceptTypes                       []string `json:"acceptTypes"`
	AcceptPresentationDocumentTargets []string `json:"acceptPresentationDocumentTargets"`
	AcceptMultiple                    *bool    `json:"acceptMultiple,omitempty"`
	Title                             string   `json:"title,omitempty"`
	Data                              string   `json:"data,omitempty"`
}
