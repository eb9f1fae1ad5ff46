package onboarding_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

var scriptNonce = regexp.MustCompile(`<script nonce="([^"]+)"`)

// T-DR-03..T-DR-07: /lti/register fetches the platform's configuration with the
// registration token, registers ltiop, records an inactive registration with the
// platform's endpoints and the deployment where the platform put it, and answers the
// closing page.
func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       lmssim.DeploymentMode
		deployment bool
	}{
		{"Canvas-style: deployment_id at the top level", lmssim.DeploymentTopLevel, true},
		{"Moodle-style: deployment_id in the tool configuration", lmssim.DeploymentInToolConfig, true},
		{"Brightspace-style: no deployment_id", lmssim.DeploymentAbsent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *harnessConfig) { c.mode = tc.mode })
			res := h.open(h.start(), false)
			if res.Status != http.StatusOK || !strings.Contains(res.Body, "org.imsglobal.lti.close") {
				t.Fatalf("register: %d %s", res.Status, res.Body)
			}
			nonce := scriptNonce.FindStringSubmatch(res.Body)
			if nonce == nil || !strings.Contains(res.Header.Get("Content-Security-Policy"), "'nonce-"+nonce[1]+"'") ||
				res.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("closing page headers %v", res.Header)
			}

			sent := h.lms.Registrations() // T-DR-04
			if len(sent) != 1 {
				t.Fatalf("the platform received %d registrations", len(sent))
			}
			pr := h.only() // T-DR-06
			// The platform was told the registration's own key set, named before it answered.
			if !reflect.DeepEqual(sent[0]["redirect_uris"], []any{publicURL + paths.Launch}) ||
				sent[0]["initiate_login_uri"] != publicURL+paths.Login || sent[0]["jwks_uri"] != publicURL+paths.KeySet(pr.Name) {
				t.Fatalf("registration sent %v, stored as %s", sent[0], pr.Name)
			}
			want := ltiv1.PlatformRegistrationSpec{
				URL: ltiv1.EndpointURL(h.lmsURL), ClientID: "dr-client", Name: pr.Spec.Name,
				AuthenticationEndpoint: ltiv1.EndpointURL(h.lmsURL + lmssim.AuthPath),
				AccesstokenEndpoint:    ltiv1.EndpointURL(h.lmsURL + lmssim.TokenPath),
				AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: h.lmsURL + lmssim.JWKSPath},
				Active:                 ptr.To(false),
			}
			if !reflect.DeepEqual(pr.Spec, want) || !strings.Contains(pr.Spec.Name, strings.TrimPrefix(h.lmsURL, "http://")) {
				t.Fatalf("stored %+v, want %+v", pr.Spec, want)
			}
			if got := pr.Status.DeploymentIDs; tc.deployment != slices.Equal(got, []string{"dr-deployment"}) || !tc.deployment && len(got) != 0 {
				t.Fatalf("T-DR-05: status.deploymentIds %v", got)
			}
			managers := map[string]bool{}
			for _, m := range pr.ManagedFields {
				managers[m.Manager] = true
			}
			if !managers["ltiop-registration"] || tc.deployment != managers["ltiop-launch"] {
				t.Fatalf("field managers %v", managers)
			}
		})
	}
}

// T-DR-06: a token audience other than the token endpoint is kept; AutoActivate makes
// the registration active at once.
func TestRegisterWithAuthorizationServerAndAutoActivate(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.opts.AutoActivate = true
		c.lms = func(l *lmssim.LMS) { l.TokenAudience = "https://auth.lms.example/token" }
	})
	if res := h.open(h.start(), false); res.Status != http.StatusOK {
		t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	pr := h.only()
	if pr.Spec.AuthorizationServer != "https://auth.lms.example/token" || !pr.Spec.IsActive() {
		t.Fatalf("stored %+v", pr.Spec)
	}
}

// T-DR-08: registering the same (issuer, client_id) again updates the registration,
// keeping its name, activation and deployments.
func TestRegisterAgainUpdates(t *testing.T) {
	h := newHarness(t)
	if res := h.open(h.start(), false); res.Status != http.StatusOK {
		t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	pr := h.only()
	pr.Spec.Name, pr.Spec.Active, pr.Spec.DeploymentIDs = "Our Canvas", ptr.To(true), []string{"d-admin"}
	if err := h.k8s.Update(t.Context(), pr); err != nil {
		t.Fatal(err)
	}
	h.show(h.only())

	if res := h.open(h.start(), false); res.Status != http.StatusOK {
		t.Fatalf("register again: %d %s", res.Status, res.Body)
	}
	again := h.only()
	if again.Name != pr.Name || again.Spec.Name != "Our Canvas" || !again.Spec.IsActive() ||
		!slices.Equal(again.Spec.DeploymentIDs, []string{"d-admin"}) {
		t.Fatalf("after registering again: %+v", again.Spec)
	}
	sent := h.lms.Registrations()
	if len(sent) != 2 {
		t.Fatalf("the platform received %d registrations", len(sent))
	}
	// The second registration told the platform a key-set name picked before it answered
	// with the same client_id: kept as the registration's alias, so that URL serves its keys.
	alias := again.Annotations[ltiv1.AnnotationKeySetAlias]
	if alias == "" || alias == again.Name || sent[1]["jwks_uri"] != publicURL+paths.KeySet(alias) {
		t.Fatalf("jwks_uri sent %v, alias kept %q", sent[1]["jwks_uri"], alias)
	}
	h.show(again)
	private, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := keys.EncodePrivateKey(private)
	h.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: again.Name + "-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: again.Name, UID: again.UID, Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes},
	})
	own, _ := h.reg.KeySet(again.Name)
	if viaAlias, found := h.reg.KeySet(alias); !found || viaAlias == nil || viaAlias != own {
		t.Fatalf("the alias %s must serve the registration's own key set", alias)
	}
}

// Refusals of /lti/register before anything is sent to the platform: nothing registered
// there, nothing stored.
func TestRegisterRefusalsBeforeRegistering(t *testing.T) {
	h := newHarness(t)
	privateRedirect := func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/moved" {
			return false
		}
		http.Redirect(w, r, "http://10.1.2.3/.well-known/openid-configuration", http.StatusFound)
		return true
	}
	startURL := func(change func(q url.Values)) string {
		u, _ := url.Parse(h.start())
		q := u.Query()
		change(q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, tc := range []struct {
		name      string
		url       func() string
		intercept func(http.ResponseWriter, *http.Request) bool
		status    int
		code      string
		says      string
		hides     string // what the answer must not name: an address, the upstream's body
	}{
		{name: "T-DR-01 no openid_configuration", url: func() string { return h.ltiop.URL + paths.Register },
			status: 400, code: "MISSING_OPENID_CONFIGURATION"},
		{name: "a private address", url: func() string {
			return startURL(func(q url.Values) { q.Set("openid_configuration", "http://10.1.2.3/.well-known/openid-configuration") })
		}, status: 400, code: "INVALID_OPENID_CONFIGURATION_URL", says: "allowed address", hides: "10.1.2.3"},
		{name: "the cloud metadata address", url: func() string {
			return startURL(func(q url.Values) { q.Set("openid_configuration", "http://169.254.169.254/latest/meta-data/") })
		}, status: 400, code: "INVALID_OPENID_CONFIGURATION_URL", says: "allowed address", hides: "169.254"},
		{name: "not a URL", url: func() string {
			return startURL(func(q url.Values) { q.Set("openid_configuration", "/.well-known/openid-configuration") })
		}, status: 400, code: "INVALID_OPENID_CONFIGURATION_URL", says: "https URL"},
		{name: "a redirect to a private address", url: func() string {
			return startURL(func(q url.Values) { q.Set("openid_configuration", h.lmsURL+"/moved") })
		}, intercept: privateRedirect, status: 400, code: "URL_NOT_ALLOWED", says: "outbound policy", hides: "10.1.2.3"},
		{name: "T-DR-02 an issuer on another host", url: func() string {
			return startURL(func(q url.Values) {
				q.Set("openid_configuration", strings.Replace(q.Get("openid_configuration"), "127.0.0.1", "localhost", 1))
			})
		}, status: 400, code: "ISSUER_MISMATCH", says: "issuer", hides: "localhost"},
		{name: "T-DR-03 a wrong registration token", url: func() string {
			return startURL(func(q url.Values) { q.Set("registration_token", "wrong") })
		}, status: 502, code: "CONFIGURATION_UNAVAILABLE", says: "could not be fetched"},
		{name: "a configuration that is not JSON", url: h.start, intercept: func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != lmssim.OpenIDConfigurationPath {
				return false
			}
			_, _ = w.Write([]byte("<html>internal admin console"))
			return true
		}, status: 400, code: "INVALID_CONFIGURATION", says: "JSON", hides: "internal admin console"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.intercept != nil {
				h.interceptLMS(tc.intercept)
			}
			u := tc.url()
			res := h.open(u, true)
			desc := testhttp.WantRefusal(t, res, tc.status, tc.code)
			if !strings.Contains(desc, tc.says) {
				t.Fatalf("description %q does not say %q", desc, tc.says)
			}
			page := h.open(u, false)
			testhttp.WantRefusal(t, page, tc.status, tc.code) // the LMS's frame gets the HTML page
			if tc.hides != "" && (strings.Contains(res.Body, tc.hides) || strings.Contains(page.Body, tc.hides)) {
				t.Fatalf("the answer names %q (the detail belongs in the log): %s", tc.hides, res.Body)
			}
		})
	}
	if n := len(h.lms.Registrations()); n != 0 || len(h.stored()) != 0 {
		t.Fatalf("refusals registered %d times, stored %d", n, len(h.stored()))
	}
}

// Outside dev mode, only https configuration URLs are accepted.
func TestRegisterRequiresHTTPS(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.opts.Outbound = outbound.Policy{} })
	desc := testhttp.WantRefusal(t, h.open(h.start(), true), 400, "INVALID_OPENID_CONFIGURATION_URL")
	if !strings.Contains(desc, "https") || len(h.lms.Registrations()) != 0 {
		t.Fatalf("description %q", desc)
	}
}

// The platform refuses the registration or answers nonsense: 502 with its status, and
// nothing stored.
func TestRegisterWhenThePlatformRefuses(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name     string
		answer   func(w http.ResponseWriter)
		code     string
		upstream float64
	}{
		{"REGISTRATION_REFUSED", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_client_metadata","internal":"db01.corp:5432"}`))
		}, "REGISTRATION_REFUSED", 400},
		{"an answer without client_id", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		}, "INVALID_REGISTRATION_RESPONSE", 200},
		{"no answer", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
		}, "REGISTRATION_UNAVAILABLE", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.interceptLMS(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != "POST" || r.URL.Path != lmssim.RegisterPath {
					return false
				}
				tc.answer(w)
				return true
			})
			res := h.open(h.start(), true)
			testhttp.WantRefusal(t, res, 502, tc.code)
			if strings.Contains(res.Body, "db01.corp") || strings.Contains(res.Body, "invalid_client_metadata") {
				t.Fatalf("the answer quotes the platform's body: %s", res.Body)
			}
			details := res.JSON(t)["details"].(map[string]any)
			if tc.upstream != 0 && (details["externalError"] != true || details["upstreamStatus"] != tc.upstream) {
				t.Fatalf("details %v", details)
			}
			if len(h.stored()) != 0 {
				t.Fatal("a refused registration was stored")
			}
		})
	}
}

// The platform accepted, but the API server refused the write: the error says so
// without its internals.
func TestRegisterWhenTheAPIServerRefuses(t *testing.T) {
	h := newHarness(t)
	invalid := apierrors.NewInvalid(ltiv1.GroupVersion.WithKind("PlatformRegistration").GroupKind(), "x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "authenticationEndpoint"), "x", "must be https")})
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{{errAPIServerDown, 503, "API_SERVER_UNAVAILABLE"}, {invalid, 400, "INVALID_PARAMETERS"}} {
		h.writes.FailNext(tc.err)
		res := h.open(h.start(), true)
		desc := testhttp.WantRefusal(t, res, tc.status, tc.code)
		if strings.Contains(res.Body, "10.96.0.1") || strings.Contains(desc, "spec.") {
			t.Fatalf("description %q", desc)
		}
	}
	if len(h.stored()) != 0 {
		t.Fatal("a refused write was stored")
	}

	// Recording the deployment is best effort: the registration stands, and the deployment
	// is learnt at the first launch.
	h.statusWrites.FailNext(errAPIServerDown)
	if res := h.open(h.start(), true); res.Status != http.StatusOK {
		t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	if pr := h.only(); len(pr.Status.DeploymentIDs) != 0 || h.statusWrites.Pending() {
		t.Fatalf("status %+v", pr.Status)
	}
}

// Before the sealing keys are read, a registration that needs pre-approval is refused
// with 503 and nothing is sent to the platform.
func TestRegisterWithoutSealingKeys(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.noKeys = true
		c.opts.PreApprovalURL = "https://app.example/approve"
	})
	testhttp.WantRefusal(t, h.open(h.start(), true), 503, "NOT_READY")
	if len(h.lms.Registrations()) != 0 || len(h.stored()) != 0 {
		t.Fatal("a refused registration went through")
	}
}

// GET /register/canvas: the developer-key JSON to paste into Canvas.
func TestCanvasConfiguration(t *testing.T) {
	h := newHarness(t)
	res := h.call("GET", paths.CanvasConfiguration, nil)
	if res.Status != http.StatusOK {
		t.Fatalf("canvas: %d %s", res.Status, res.Body)
	}
	m := res.JSON(t)
	if m["oidc_initiation_url"] != publicURL+paths.Login || m["public_jwk_url"] != publicURL+paths.Keys ||
		m["target_link_uri"] != publicURL+paths.Launch {
		t.Fatalf("configuration %v", m)
	}
}

// A deployment learnt from a launch is added to status.deploymentIds next to the known
// ones, in the background; a known one is not written again.
func TestRecordDeployment(t *testing.T) {
	h := newHarness(t)
	if res := h.open(h.start(), false); res.Status != http.StatusOK {
		t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	h.show(h.only())
	p := h.reg.Get(h.only().Name)
	h.o.RecordDeployment(p, "learnt")
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(h.only().Status.DeploymentIDs, []string{"dr-deployment", "learnt"}) {
		if time.Now().After(deadline) {
			t.Fatalf("status.deploymentIds %v", h.only().Status.DeploymentIDs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	writes := h.statusWrites.Passed()
	h.o.RecordDeployment(p, "dr-deployment")
	h.o.RecordDeployment(p, "")
	time.Sleep(100 * time.Millisecond)
	if n := h.statusWrites.Passed(); n != writes {
		t.Fatalf("%d status writes for a known deployment", n-writes)
	}
}

// serveConfiguration makes the LMS serve its OpenID configuration with member set to value.
func (h *harness) serveConfiguration(member, value string) {
	h.interceptLMS(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != lmssim.OpenIDConfigurationPath {
			return false
		}
		doc := h.lms.OpenIDConfiguration()
		doc[member] = value
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
		return true
	})
}

// The attack of issue #34 item 3 through anonymous /lti/register: the LMS's configuration
// names a key set, token endpoint or authorization endpoint at a private address (the
// Kubernetes API's Service address). ltiop would call them at launches, service calls and
// registration checks, under dynamic registration's policy (the origin label it writes),
// so they must pass that policy now: refused, naming the member but not the address,
// before anything is registered with the platform or stored, with pre-approval too.
func TestRegisterRefusesPlatformURLsOutsideDynamicRegistrationsPolicy(t *testing.T) {
	for _, member := range []string{"jwks_uri", "token_endpoint", "authorization_endpoint"} {
		for _, approval := range []bool{false, true} {
			t.Run(fmt.Sprint(member, " pre-approval ", approval), func(t *testing.T) {
				h := newHarness(t, func(c *harnessConfig) {
					if approval {
						preApproval(c)
					}
				})
				h.serveConfiguration(member, "http://10.96.0.1/api/v1/secrets")
				res := h.open(h.start(), true)
				desc := testhttp.WantRefusal(t, res, http.StatusBadRequest, httpapi.CodeURLNotAllowed)
				if !strings.Contains(desc, member) || strings.Contains(res.Body, "10.96") {
					t.Fatalf("description %q: must name %s and not the address", desc, member)
				}
				if n := len(h.lms.Registrations()); n != 0 || len(h.stored()) != 0 {
					t.Fatalf("registered %d times, stored %d", n, len(h.stored()))
				}
			})
		}
	}
}

// Within dynamicRegistration.allowCidrs (an on-premises LMS's key set), the registration
// is written, labelled as dynamic registration's: its URLs are fetched under that
// allowance later too.
func TestRegisterAcceptsPlatformURLsWithinDynamicRegistrationsAllowance(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.opts.Outbound.AllowPrefixes = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	})
	h.serveConfiguration("jwks_uri", "http://10.96.0.1/jwks")
	if res := h.open(h.start(), false); res.Status != http.StatusOK {
		t.Fatalf("register: %d %s", res.Status, res.Body)
	}
	pr := h.only()
	if pr.Spec.AuthConfig.Key != "http://10.96.0.1/jwks" || pr.Labels[ltiv1.LabelOrigin] != ltiv1.OriginDynamicRegistration {
		t.Fatalf("stored %v %+v", pr.Labels, pr.Spec.AuthConfig)
	}
}
