package lmssim

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Asset Processor and EULA (1EdTech LTI Asset Processor 1.0): the platform side. After
// EnableServices the simulator serves a demo submission's assets (Asset Service), takes
// reports (Asset Report Service, shown at ReportsPagePath) and serves the EULA service;
// /start?message=LtiAssetProcessorSettingsRequest|LtiReportReviewRequest|LtiEulaRequest
// launches those messages.

// Scopes of the Asset Processor and EULA services.
const (
	ScopeAssetReadOnly  = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"
	ScopeReport         = "https://purl.imsglobal.org/spec/lti/scope/report"
	ScopeEulaUser       = "https://purl.imsglobal.org/spec/lti/scope/eula/user"
	ScopeEulaDeployment = "https://purl.imsglobal.org/spec/lti/scope/eula/deployment"
)

// AssetProcessorScopes are the scopes the token endpoint also grants by default.
func AssetProcessorScopes() []string {
	return []string{ScopeAssetReadOnly, ScopeReport, ScopeEulaUser, ScopeEulaDeployment}
}

// Claim names the simulator sends. webserver/protocol/lti has its own: a simulator imports no product code.
const (
	ClaimActivity        = "https://purl.imsglobal.org/spec/lti/claim/activity"
	ClaimSubmission      = "https://purl.imsglobal.org/spec/lti/claim/submission"
	ClaimAsset           = "https://purl.imsglobal.org/spec/lti/claim/asset"
	ClaimAssetReportType = "https://purl.imsglobal.org/spec/lti/claim/assetreport_type"
	ClaimAssetService    = "https://purl.imsglobal.org/spec/lti/claim/assetservice"
	ClaimAssetReport     = "https://purl.imsglobal.org/spec/lti/claim/assetreport"
	ClaimEulaService     = "https://purl.imsglobal.org/spec/lti/claim/eulaservice"
	ClaimForUser         = "https://purl.imsglobal.org/spec/lti/claim/for_user"
)

// Paths of the Asset Processor services, and the demo submission.
const (
	AssetsPath      = "/api/lti/asset_processors/1/assets/"
	ReportsPath     = "/api/lti/asset_processors/1/reports"
	ReportsPagePath = "/asset_reports"
	EulaPath        = "/api/lti/asset_processor_eulas/1"

	DemoActivityID   = "activity-essay-1"
	DemoSubmissionID = "submission-1:1"
	DemoAssetID      = "asset-essay-1"
	DemoStudent      = "student-1"
)

// Asset is a file of a submission the Asset Service serves.
type Asset struct {
	ID, Filename, ContentType string
	Content                   []byte
	// Chunked serves the asset without Content-Length (the tool learns its size by reading).
	Chunked bool
	// RedirectTo answers with a redirect there instead, as Canvas sends tools to its file
	// store.
	RedirectTo string
}

// apState is the Asset Processor state, guarded by LMS.mu.
type apState struct {
	assets       map[string]Asset
	order        []string
	reports      []map[string]any
	eulaRequired bool
	acceptances  map[string]map[string]any // user → the acceptance the tool posted
	downloads    int
}

const maxReports = 1000

// ap returns the Asset Processor state, made with the demo submission on first use. The
// caller holds l.mu.
func (l *LMS) ap() *apState {
	if l.aps == nil {
		l.aps = &apState{assets: map[string]Asset{}, eulaRequired: true, acceptances: map[string]map[string]any{}}
		l.addAsset(Asset{ID: DemoAssetID, Filename: "essay.txt", ContentType: "text/plain; charset=utf-8",
			Content: []byte("The Analytical Engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.\n")})
	}
	return l.aps
}

func (l *LMS) addAsset(a Asset) {
	if _, ok := l.aps.assets[a.ID]; !ok {
		l.aps.order = append(l.aps.order, a.ID)
	}
	l.aps.assets[a.ID] = a
}

// AddAsset adds (or replaces) an asset of the demo submission.
func (l *LMS) AddAsset(a Asset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ap()
	l.addAsset(a)
}

// Reports are the reports the tool posted, oldest first.
func (l *LMS) Reports() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ap().reports)
}

// AssetDownloads is how many asset downloads the Asset Service answered with the asset.
func (l *LMS) AssetDownloads() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ap().downloads
}

// EulaRequired is the deployment's EULA requirement as the tool last set it (true at first).
func (l *LMS) EulaRequired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ap().eulaRequired
}

// EulaAcceptance is the acceptance the tool recorded for user, nil when none.
func (l *LMS) EulaAcceptance(user string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ap().acceptances[user]
}

func (l *LMS) assetProcessorRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"GET " + AssetsPath + "{id}":      l.serveAsset,
		"POST " + ReportsPath:             l.postReport,
		"GET " + ReportsPagePath:          l.reportsPage,
		"GET " + EulaPath + "/deployment": l.getEulaDeployment,
		"PUT " + EulaPath + "/deployment": l.putEulaDeployment,
		"POST " + EulaPath + "/user":      l.postEulaUser,
		"DELETE " + EulaPath + "/user":    l.deleteEulaUsers,
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if l.state() == nil {
				http.NotFound(w, r)
				return
			}
			h(w, r)
		})
	}
}

// SubmissionClaims are the claims of the demo submission, as an
// LtiAssetProcessorSubmissionNotice carries them: activity, submission, for_user, and the
// asset service (every asset) and report service.
func (l *LMS) SubmissionClaims() map[string]any {
	l.mu.Lock()
	assets := make([]any, 0, len(l.ap().order))
	for _, id := range l.aps.order {
		a := l.aps.assets[id]
		assets = append(assets, map[string]any{"asset_id": a.ID, "url": l.Issuer + AssetsPath + a.ID, "title": a.Filename,
			"filename": a.Filename, "size": len(a.Content), "content_type": a.ContentType,
			"timestamp": time.Now().UTC().Format(time.RFC3339)})
	}
	l.mu.Unlock()
	return map[string]any{
		ClaimActivity:     map[string]any{"id": DemoActivityID, "title": "Essay 1"},
		ClaimSubmission:   map[string]any{"id": DemoSubmissionID},
		ClaimForUser:      map[string]any{"user_id": DemoStudent, "roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}},
		ClaimAssetService: map[string]any{"scope": []string{ScopeAssetReadOnly}, "assets": assets},
		ClaimAssetReport:  map[string]any{"scope": []string{ScopeReport}, "report_url": l.Issuer + ReportsPath},
	}
}

// MakeAssetProcessorMessage turns launch claims into message (LtiAssetProcessorSettingsRequest,
// LtiReportReviewRequest or LtiEulaRequest) with the claims it requires. A report review
// also carries the submission's asset and report services, so the tool can act on it
// without a notice. Another message type leaves the claims alone.
func (l *LMS) MakeAssetProcessorMessage(message string, claims map[string]any) {
	switch message {
	case "LtiAssetProcessorSettingsRequest":
		claims[claimMessageType] = message
		claims[ClaimActivity] = map[string]any{"id": DemoActivityID, "title": "Essay 1"}
	case "LtiReportReviewRequest":
		claims[claimMessageType] = message
		maps.Copy(claims, l.SubmissionClaims())
		claims[ClaimAsset] = map[string]any{"id": DemoAssetID}
		claims[ClaimAssetReportType] = "originality"
	case "LtiEulaRequest":
		claims[claimMessageType] = message
		claims[ClaimEulaService] = map[string]any{"url": l.Issuer + EulaPath, "scope": []string{ScopeEulaUser, ScopeEulaDeployment}}
	default:
		return
	}
	delete(claims, "https://purl.imsglobal.org/spec/lti/claim/resource_link")
	delete(claims, "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice")
	delete(claims, "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")
}

func (l *LMS) serveAsset(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeAssetReadOnly) {
		return
	}
	l.mu.Lock()
	a, ok := l.ap().assets[r.PathValue("id")]
	if ok {
		l.aps.downloads++
	}
	l.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if a.RedirectTo != "" {
		http.Redirect(w, r, a.RedirectTo, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", a.ContentType)
	w.Header().Set("Content-Disposition", `attachment; filename="`+strings.ReplaceAll(a.Filename, `"`, "")+`"`)
	if a.Chunked {
		// Written in pieces with a flush, so the answer is chunked (no Content-Length).
		rc := http.NewResponseController(w)
		for rest := a.Content; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			_ = rc.Flush()
			rest = rest[n:]
		}
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.Content))
}

var (
	reportProgress = []string{"Processed", "Processing", "PendingManual", "Failed", "NotProcessed", "NotReady"}
	reportFields   = []string{"assetId", "type", "timestamp", "title", "comment", "result", "scoreGiven", "scoreMaximum",
		"indicationColor", "indicationAlt", "priority", "processingProgress", "errorCode", "visibleToOwner"}
)

// postReport is the Asset Report Service, strict: a known asset, a type, an ISO 8601
// timestamp not older than the last report of the same asset and type (409, as Canvas),
// processingProgress from the spec's list, priority 0–5.
func (l *LMS) postReport(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeReport) || !requireContentType(w, r, "application/json") {
		return
	}
	rep, err := decodeObject(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for k := range rep {
		if !slices.Contains(reportFields, k) {
			http.Error(w, "unknown report field "+k, http.StatusBadRequest)
			return
		}
	}
	asset, _ := rep["assetId"].(string)
	typ, _ := rep["type"].(string)
	ts, _ := rep["timestamp"].(string)
	progress, _ := rep["processingProgress"].(string)
	priority, _ := rep["priority"].(float64)
	when, terr := time.Parse(time.RFC3339Nano, ts)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, known := l.ap().assets[asset]
	switch {
	case !known:
		writeJSON(w, http.StatusBadRequest, "application/json", map[string]string{"error": "Invalid asset"})
		return
	case typ == "" || terr != nil || !slices.Contains(reportProgress, progress) || priority < 0 || priority > 5:
		writeJSON(w, http.StatusBadRequest, "application/json", map[string]string{"error": "type, timestamp, processingProgress or priority invalid"})
		return
	}
	for _, old := range l.aps.reports {
		oldTS, _ := time.Parse(time.RFC3339Nano, old["timestamp"].(string))
		if old["assetId"] == asset && old["type"] == typ && oldTS.After(when) {
			writeJSON(w, http.StatusConflict, "application/json", map[string]string{"error": "An existing report has a newer timestamp"})
			return
		}
	}
	l.aps.reports = append(l.aps.reports, rep)
	if len(l.aps.reports) > maxReports {
		l.aps.reports = slices.Delete(l.aps.reports, 0, len(l.aps.reports)-maxReports)
	}
	writeJSON(w, http.StatusCreated, "application/json", rep)
}

var reportsPage = template.Must(template.New("reports").Parse(`<!doctype html>
<html><head><title>Asset reports</title></head><body>
<h1>Asset reports</h1>
{{if not .}}<p>No report yet.</p>{{else}}<table border="1">
<tr><th>Asset</th><th>Type</th><th>Progress</th><th>Priority</th><th>Result</th><th>Score</th><th>Indication</th><th>Comment</th><th>Timestamp</th></tr>
{{range .}}<tr><td>{{.assetId}}</td><td>{{.type}}</td><td>{{.processingProgress}}</td><td>{{.priority}}</td><td>{{.result}}</td>
<td>{{.scoreGiven}}{{if .scoreMaximum}} / {{.scoreMaximum}}{{end}}</td>
<td>{{if .indicationColor}}<span title="{{.indicationAlt}}">{{.indicationColor}} {{.indicationAlt}}</span>{{end}}</td>
<td>{{.comment}}{{if .errorCode}} ({{.errorCode}}){{end}}</td><td>{{.timestamp}}</td></tr>
{{end}}</table>{{end}}
</body></html>`))

// reportsPage shows the reports, as a teacher's grading view would.
func (l *LMS) reportsPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = reportsPage.Execute(w, l.Reports())
}

func (l *LMS) getEulaDeployment(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeEulaDeployment) {
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]bool{"eulaRequired": l.EulaRequired()})
}

func (l *LMS) putEulaDeployment(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeEulaDeployment) || !requireContentType(w, r, "application/json") {
		return
	}
	body, err := decodeObject(w, r)
	required, ok := body["eulaRequired"].(bool)
	if err != nil || !ok || len(body) != 1 {
		http.Error(w, "the body must be {\"eulaRequired\": true|false}", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.ap().eulaRequired = required
	l.mu.Unlock()
	writeJSON(w, http.StatusOK, "application/json", body)
}

func (l *LMS) postEulaUser(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeEulaUser) || !requireContentType(w, r, "application/json") {
		return
	}
	body, err := decodeObject(w, r)
	user, _ := body["userId"].(string)
	_, accepted := body["accepted"].(bool)
	ts, _ := body["timestamp"].(string)
	if _, terr := time.Parse(time.RFC3339Nano, ts); err != nil || user == "" || !accepted || terr != nil {
		http.Error(w, "userId, accepted and an ISO 8601 timestamp are required", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	if len(l.ap().acceptances) < maxReports {
		l.aps.acceptances[user] = body
	}
	l.mu.Unlock()
	writeJSON(w, http.StatusCreated, "application/json", body)
}

func (l *LMS) deleteEulaUsers(w http.ResponseWriter, r *http.Request) {
	if !l.bearer(w, r, ScopeEulaUser) {
		return
	}
	l.mu.Lock()
	l.ap().acceptances = map[string]map[string]any{}
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// ReportsJSON is the reports as JSON, for the demo's output.
func (l *LMS) ReportsJSON() string {
	b, _ := json.MarshalIndent(l.Reports(), "", "  ")
	return string(b)
}
