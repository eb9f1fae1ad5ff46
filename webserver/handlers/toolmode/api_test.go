package toolmode_test

import (
	"encoding/json"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

// serviceKeyOf returns services.serviceKey of the launch's simplified ID token.
func (rg *rig) serviceKeyOf(t testing.TB, ltik string) string {
	t.Helper()
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil)
	if tok.Status != http.StatusOK {
		t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
	}
	key, _ := tok.JSON(t)["services"].(map[string]any)["serviceKey"].(string)
	return key
}

// GET /api/idtoken: the simplified ID token of the launch, or the claims as received.
func TestIDToken(t *testing.T) {
	rg := newRig(t)
	ltik := rg.launchWith(t, nil)

	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil)
	if tok.Status != http.StatusOK || !strings.HasPrefix(tok.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
	}
	var got struct {
		LTIVersion string `json:"ltiVersion"`
		User       struct{ ID string }
		Platform   struct{ ID, URL, ClientID, DeploymentID, Name string }
		Launch     struct{ Type, Target string }
		Services   struct{ ServiceKey string }
	}
	if err := json.Unmarshal([]byte(tok.Body), &got); err != nil {
		t.Fatal(err)
	}
	if got.LTIVersion != "1.3.0" || got.User.ID != "u" || got.Launch.Type != "LtiResourceLinkRequest" ||
		got.Launch.Target != rg.ltiop.URL+paths.Launch {
		t.Fatalf("token %+v", got)
	}
	if p := got.Platform; p.ID != "bench" || p.URL != rg.lms.Issuer || p.ClientID != rg.lms.ClientID ||
		p.DeploymentID != rigDeployment || p.Name != "Bench LMS" {
		t.Fatalf("platform %+v", p)
	}
	if got.Services.ServiceKey == "" || rg.serviceKeyOf(t, ltik) != got.Services.ServiceKey {
		t.Fatal("the service key is missing or differs between calls")
	}

	raw := rg.call(t, nil, "GET", "/api/idtoken?raw=true", ltikAuth(ltik), nil).JSON(t)
	if raw["sub"] != "u" || raw["ltiVersion"] != "1.3.0" || raw[ltiClaim+"deployment_id"] != rigDeployment {
		t.Fatalf("raw claims %v", raw)
	}

	legacy := rg.call(t, nil, "GET", "/api/idtoken", map[string]string{
		"Authorization": "LTIK-AUTH-V1 Token=" + ltik + ", Additional=Bearer " + benchAPIKey}, nil)
	if legacy.Status != http.StatusOK {
		t.Fatalf("LTIK-AUTH-V1: %d %s", legacy.Status, legacy.Body)
	}
}

// A deep-linking request without target_link_uri (as in the certification suite) shows
// the login's target; a launch without NRPS, AGS or groups has no service key.
func TestIDTokenOfADeepLinkingLaunchWithoutServices(t *testing.T) {
	rg := newRig(t)
	ltik := rg.deepLinkingLaunch(t, func(c map[string]any) {
		delete(c, ltiClaim+"target_link_uri")
		delete(c, "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice")
		delete(c, "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")
		delete(c, "https://purl.imsglobal.org/spec/lti-gs/claim/groupsservice")
	})
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil).JSON(t)
	launch := tok["launch"].(map[string]any)
	if launch["type"] != "LtiDeepLinkingRequest" || launch["target"] != rg.ltiop.URL+paths.Launch {
		t.Fatalf("launch %v", launch)
	}
	if key := tok["services"].(map[string]any)["serviceKey"]; key != nil && key != "" {
		t.Fatalf("a service key without services: %v", key)
	}
}

// Every malformed or wrong LTIK header is one 401 code that says nothing of what was
// wrong, and never echoes the API key (service interface §7).
func TestRequireLtikRefusals(t *testing.T) {
	rg := newRig(t)
	ltik := rg.launchWith(t, nil)
	key := rg.serviceKeyOf(t, ltik)
	tampered := []byte(ltik)
	tampered[len(tampered)/2] ^= 1
	client := browser()
	ar := rg.startLogin(t, client, nil)
	for name, h := range map[string]string{
		"missing":              "",
		"bearer":               "Bearer " + benchAPIKey,
		"no ltik":              "LTIK-AUTH-V2 " + benchAPIKey,
		"empty ltik":           "LTIK-AUTH-V2 " + benchAPIKey + ":",
		"wrong key":            "LTIK-AUTH-V2 wrong:" + ltik,
		"tampered ltik":        "LTIK-AUTH-V2 " + benchAPIKey + ":" + string(tampered),
		"garbage ltik":         "LTIK-AUTH-V2 " + benchAPIKey + ":abc.def",
		"a state, not an ltik": "LTIK-AUTH-V2 " + benchAPIKey + ":" + ar.State,
		"v1 without key":       "LTIK-AUTH-V1 Token=" + ltik,
		"a service key":        "SERVICE-AUTH-V1 " + benchAPIKey + ":" + key,
	} {
		t.Run(name, func(t *testing.T) {
			res := rg.call(t, nil, "GET", "/api/idtoken", map[string]string{"Authorization": h}, nil)
			testhttp.WantRefusal(t, res, 401, toolmode.CodeInvalidLtikAuth)
			if strings.Contains(res.Body, benchAPIKey) {
				t.Fatal("the API key is echoed")
			}
		})
	}

	t.Run("an expired ltik", func(t *testing.T) {
		rg := newRig(t)
		ltik := rg.launchWith(t, nil)
		rg.clock.Advance(24*time.Hour + time.Second) // also past the opened-ltik cache
		testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil), 401, toolmode.CodeInvalidLtikAuth)
		toolmode.ForgetOpenedLtiks(rg.tool)
		testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil), 401, toolmode.CodeInvalidLtikAuth)
	})
}

// Revocation means revocation: once the sealing key that sealed an ltik is retired (or
// dropped from the service Secret to revoke its tokens), the ltik is refused at once, even
// though this replica opened and cached it before.
func TestRetiredSealingKeyRevokesCachedLtiks(t *testing.T) {
	rg := newRig(t)
	ltik := rg.launchWith(t, nil)
	if res := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil); res.Status != 200 {
		t.Fatalf("before: %d %s", res.Status, res.Body) // this call caches the opened ltik
	}
	successor, err := keyring.Sealing.NewKey(time.Now().Add(-time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rg.ring.Replace([]keyring.SealingKey{successor}); err != nil {
		t.Fatal(err)
	}
	testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil), 401, toolmode.CodeInvalidLtikAuth)
	// A new launch, sealed with the successor, works.
	if res := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(rg.launchWith(t, nil)), nil); res.Status != 200 {
		t.Fatalf("a new launch: %d %s", res.Status, res.Body)
	}
}

// An ltik outlives nothing about its registration: deactivated, re-created, keyless or
// deleted, the launch is refused; restored, it is accepted again.
func TestRequireLtikFollowsTheRegistration(t *testing.T) {
	rg := newRig(t)
	ltik := rg.launchWith(t, nil)
	keySecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: "bench", UID: "bench-uid", Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: rg.keyPEM},
	}
	for _, tc := range []struct {
		name         string
		change, undo func()
	}{
		{"deactivated",
			func() { rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = ptr.To(false) }) },
			func() { rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = nil }) }},
		{"re-created",
			func() { rg.recreate("other-uid") },
			func() { rg.recreate("bench-uid") }},
		{"without its key",
			func() { rg.reg.ForgetSecret(keySecret) },
			func() { rg.reg.ApplySecret(func(string, ...any) {}, keySecret) }},
		{"deleted",
			func() { rg.reg.Forget(rg.pr.DeepCopy()) },
			func() { rg.reg.Apply(rg.pr.DeepCopy()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change()
			// §7: the one code of an ltik failure, the precise one in details.reason.
			testhttp.WantReason(t, rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil), 401, toolmode.CodeInvalidLtikAuth, lti.CodeUnregistered)
			tc.undo()
			if res := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil); res.Status != http.StatusOK {
				t.Fatalf("restored: %d %s", res.Status, res.Body)
			}
		})
	}
}

// Until the API key Secret exists, the integrator API answers 503 (whatever the scheme).
func TestIntegratorAPIWithoutAnAPIKey(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.apiKey = "" })
	ltik := rg.launchWith(t, nil) // launches do not need the API key
	testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil), 503, "API_KEY_NOT_CONFIGURED")
	testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/memberships", serviceAuth("some-key"), nil), 503, "API_KEY_NOT_CONFIGURED")
	testhttp.WantRefusal(t, rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil), 503, "API_KEY_NOT_CONFIGURED")
}

// The service endpoints take LTIK-AUTH or SERVICE-AUTH-V1 only; a refused call reaches
// no platform (no access token is even asked for).
func TestRequireServiceRefusals(t *testing.T) {
	rg := newRig(t, func(c *rigConfig) { c.services = true })
	ltik := rg.launchWith(t, nil)
	key := rg.serviceKeyOf(t, ltik)
	tampered := key[:len(key)-3] + "abc"
	for _, tc := range []struct {
		name, header string
		code, reason string
	}{
		// §7: no usable scheme answers the ltik code; the precise one is in details.reason.
		{"no header", "", toolmode.CodeInvalidLtikAuth, "INVALID_AUTHORIZATION_SCHEME"},
		{"Bearer", "Bearer " + benchAPIKey, toolmode.CodeInvalidLtikAuth, "INVALID_AUTHORIZATION_SCHEME"},
		{"Basic", "Basic " + benchAPIKey, toolmode.CodeInvalidLtikAuth, "INVALID_AUTHORIZATION_SCHEME"},
		{"wrong API key", "SERVICE-AUTH-V1 wrong:" + key, toolmode.CodeInvalidServiceAuth, ""},
		{"tampered service key", "SERVICE-AUTH-V1 " + benchAPIKey + ":" + tampered, toolmode.CodeInvalidServiceAuth, ""},
		{"no service key", "SERVICE-AUTH-V1 " + benchAPIKey + ":", toolmode.CodeInvalidServiceAuth, ""},
		{"no separator", "SERVICE-AUTH-V1 " + key, toolmode.CodeInvalidServiceAuth, ""},
		{"an ltik as service key", "SERVICE-AUTH-V1 " + benchAPIKey + ":" + ltik, toolmode.CodeInvalidServiceAuth, ""},
		{"LTIK with a wrong API key", "LTIK-AUTH-V2 wrong:" + ltik, toolmode.CodeInvalidLtikAuth, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/api/memberships", "/api/lineitems"} {
				res := rg.call(t, nil, "GET", path, map[string]string{"Authorization": tc.header}, nil)
				testhttp.WantReason(t, res, 401, tc.code, tc.reason)
				if strings.Contains(res.Body, benchAPIKey) {
					t.Fatal("the API key is echoed")
				}
			}
		})
	}
	if n := rg.lms.TokenRequests(); n != 0 {
		t.Fatalf("refused calls made %d token requests", n)
	}

	// A service key stops working with its registration.
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = ptr.To(false) })
	testhttp.WantReason(t, rg.call(t, nil, "GET", "/api/memberships", serviceAuth(key), nil), 401, toolmode.CodeInvalidServiceAuth, lti.CodeUnregistered)
	if n := rg.lms.TokenRequests(); n != 0 {
		t.Fatalf("refused calls made %d token requests", n)
	}
}
