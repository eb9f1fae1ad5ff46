package toolmode

import (
	"embed"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"html/template"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

//go:embed templates/*.html
var templateFiles embed.FS

// Every HTML page goes through html/template: nothing from a request is written unescaped.
var pages = template.Must(template.ParseFS(templateFiles, "templates/*.html"))

var launchesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ltiop_launch_steps_total",
	Help: "Tool-mode login and launch requests, by step and outcome (ok or the error code).",
}, []string{"step", "outcome"})

func init() { metrics.Registry.MustRegister(launchesTotal) }

// storageKeyPrefix names the binding value in platform storage, as the 1EdTech library does.
const storageKeyPrefix = "lti_state_"

// fail answers a failed login or launch: the §7 envelope when the client asks for JSON,
// else a small error page. Never a redirect to the integrator.
func (t *Tool) fail(w http.ResponseWriter, r *http.Request, e *httpapi.Error) {
	launchesTotal.WithLabelValues(step(r), e.Code).Inc()
	log.FromContext(r.Context()).Info("launch refused", "path", r.URL.Path, "status", e.Status, "code", e.Code)
	httpapi.WriteErrorPage(w, r, e, "The launch could not be completed")
}

// refuse is fail for a launch whose registration p is known: the refusal is also told to
// launch health, so the registration's status and Events say what went wrong.
func (t *Tool) refuse(w http.ResponseWriter, r *http.Request, p *registry.Platform, e *httpapi.Error) {
	t.noteRefusal(p, e)
	t.fail(w, r, e)
}

// noteRefusal tells launch health that a launch of p was refused with e.
func (t *Tool) noteRefusal(p *registry.Platform, e *httpapi.Error) {
	if t.opts.Health != nil && p != nil {
		t.opts.Health.Refused(p, e.Code, ruleOf(e), e.Sent)
	}
}

// refuseLogin is refuse for a login naming p. A login is not signed: launch health learns
// the code and rule, nothing the request sent.
func (t *Tool) refuseLogin(w http.ResponseWriter, r *http.Request, p *registry.Platform, e *httpapi.Error) {
	if t.opts.Health != nil && p != nil {
		t.opts.Health.RefusedLogin(p, e.Code, ruleOf(e))
	}
	t.fail(w, r, e)
}

func ruleOf(e *httpapi.Error) string {
	if e.Rule != "" {
		return e.Rule
	}
	return launchRules[e.Code]
}

// launchRules are the conformance rules of the refusals that carry none themselves.
var launchRules = map[string]string{
	lti.CodeBrowserBinding:    "T-STATE-02",
	lti.CodeStateReused:       "T-STATE-03",
	lti.CodeNonceReused:       "T-NONCE-03",
	lti.CodeUnknownDeployment: "T-LOGIN-04",
	lti.CodeInvalidTarget:     "T-LOGIN-05",
}

func step(r *http.Request) string {
	switch r.URL.Path {
	case paths.Login:
		return "login"
	case paths.LaunchComplete:
		return "storage_check"
	default:
		return "launch"
	}
}

// render writes a page with a strict Content-Security-Policy: only the page's own inline
// script (by nonce) runs. Pages may be framed: LMSs show tools in iframes.
func (t *Tool) render(w http.ResponseWriter, status int, name string, data map[string]any) {
	nonce := httpapi.RandomToken(16)
	data["ScriptNonce"] = nonce
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// form-action also covers the redirect after a form post: the integrator's origins.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'unsafe-inline'; form-action "+t.formAction+"; base-uri 'none'")
	w.WriteHeader(status)
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		log.Log.Error(err, "rendering page", "page", name)
	}
}
