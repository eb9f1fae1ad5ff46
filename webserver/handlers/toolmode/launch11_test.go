package toolmode_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/pox"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti11"
)

const (
	rigConsumerKey = "lmssim-consumer"
	rigSecret      = "lmssim 1.1 secret"
)

// newRig11 is the rig with LTI 1.1 credentials on both sides: spec.lti11 on the
// registration, its Secret in the registry (as the labelled Secret cache feeds it), and
// the simulator signing with them.
func newRig11(t testing.TB, configure ...func(*rigConfig)) *rig {
	t.Helper()
	configure = append(configure, func(c *rigConfig) {
		prev := c.configure
		c.configure = func(pr *ltiv1.PlatformRegistration) {
			if prev != nil {
				prev(pr)
			}
			pr.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: rigConsumerKey, SharedSecret: ltiv1.SecretKeyRef{Name: "lti11-secret"}}
		}
	})
	rg := newRig(t, configure...)
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "lti11-secret", Labels: map[string]string{ltiv1.LabelManagedBy: ltiv1.ManagedByValue}},
		Data:       map[string][]byte{ltiv1.LTI11SecretKey: []byte(rigSecret)},
	})
	rg.lms.EnableLTI11(rigConsumerKey, rigSecret)
	return rg
}

// launch11 posts an LTI 1.1 launch form to /lti/launch.
func (rg *rig) launch11(t *testing.T, form url.Values) testhttp.Reply {
	t.Helper()
	return rg.postForm(t, browser(), paths.Launch, form, true)
}

func (rg *rig) launch11Ltik(t *testing.T, user string) string {
	t.Helper()
	res := rg.launch11(t, rg.lms.Launch11(rg.ltiop.URL+paths.Launch, user, nil))
	if res.Status != http.StatusSeeOther {
		t.Fatalf("LTI 1.1 launch: %d %s", res.Status, res.Body)
	}
	loc := res.Location(t)
	if !strings.HasPrefix(loc.String(), rigLaunchURL) || loc.Query().Get("ltik") == "" {
		t.Fatalf("LTI 1.1 launch went to %s", loc)
	}
	return loc.Query().Get("ltik")
}

func jsonPath(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		o, _ := v.(map[string]any)
		v = o[p]
	}
	return v
}

// LTI11-LAUNCH-01: an LTI 1.1 launch to the same launch URL gives an ltik, and
// /api/idtoken the simplified token of a 1.3 launch, ltiVersion 1.1.1.
func TestLTI11LaunchGivesTheSimplifiedToken(t *testing.T) {
	rg := newRig11(t)
	ltik := rg.launch11Ltik(t, "u11")
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil)
	if tok.Status != http.StatusOK {
		t.Fatalf("idtoken: %d %s", tok.Status, tok.Body)
	}
	m := tok.JSON(t)
	for path, want := range map[string]any{
		"ltiVersion":                          "1.1.1",
		"user.id":                             "u11",
		"user.name":                           "Ada Lovelace",
		"user.lti11LegacyUserId":              "u11",
		"platform.id":                         "bench",
		"platform.clientId":                   rg.lms.ClientID,
		"platform.deploymentId":               rigConsumerKey,
		"launch.type":                         "LtiResourceLinkRequest",
		"launch.target":                       rg.ltiop.URL + paths.Launch,
		"launch.context.id":                   "course-42",
		"launch.resourceLink.id":              "resource-link-1",
		"launch.custom.chapter":               "1",
		"launch.presentation.document_target": "iframe",
		"services.outcomes.available":         true,
		"services.namesAndRoles.available":    false,
		"lti11.verified":                      true,
		"lti11.status":                        lti11.StatusLaunch,
		"lti11.consumerKey":                   rigConsumerKey,
		"lti11.resourceLinkId":                "resource-link-1",
	} {
		if got := jsonPath(m, strings.Split(path, ".")...); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	roles, _ := jsonPath(m, "user", "roles").([]any)
	if len(roles) != 2 || roles[0] != "Instructor" || roles[1] != "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty" {
		t.Errorf("roles %v, want the 1.1 roles mapped to §2.1", roles)
	}
	if key, _ := jsonPath(m, "services", "serviceKey").(string); key == "" {
		t.Error("no serviceKey although Basic Outcomes are available")
	}

	raw := rg.call(t, nil, "GET", "/api/idtoken?raw=true", ltikAuth(ltik), nil).JSON(t)
	if raw["ltiVersion"] != "1.1.1" || raw["user_id"] != "u11" || raw["oauth_consumer_key"] != rigConsumerKey {
		t.Errorf("raw: %v", raw)
	}
	if _, ok := raw["oauth_signature"]; ok {
		t.Error("raw answers with the OAuth signature")
	}
}

// LTI11-LAUNCH-02: a launch URL with a query (one link per resource) is signed with its
// query, and the query is in /api/idtoken's launch.target, not in the integrator's URL
// (see TestLTI11SignedParametersMovedIntoTheQueryDoNotReachTheIntegratorURL).
func TestLTI11LaunchCarriesTheLaunchURLQuery(t *testing.T) {
	rg := newRig11(t)
	target := rg.ltiop.URL + paths.Launch + "?resource=quiz-7"
	res := rg.postForm(t, browser(), paths.Launch+"?resource=quiz-7", rg.lms.Launch11(target, "u", nil), true)
	if res.Status != http.StatusSeeOther {
		t.Fatalf("launch: %d %s", res.Status, res.Body)
	}
	loc := res.Location(t)
	if loc.Query().Has("resource") || loc.Query().Get("ltik") == "" {
		t.Fatalf("went to %s", loc)
	}
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(loc.Query().Get("ltik")), nil)
	if got := jsonPath(tok.JSON(t), "launch", "target"); got != target {
		t.Errorf("launch.target = %v, want %s", got, target)
	}
	// The same form posted without the query it was signed with is refused.
	form := rg.lms.Launch11(target, "u", nil)
	testhttp.WantRefusal(t, rg.launch11(t, form), 401, lti11.CodeInvalidSignature)
}

// The attack of issue #28 item 3: OAuth 1.0a signs the parameter set, not whether each
// came in the query or the body, so the holder of a signed form can move parameters between
// them and the signature still holds. The integrator's URL must not change with it: a 1.1
// launch's query is not merged into the destination (the launch URL's own query stays).
func TestLTI11SignedParametersMovedIntoTheQueryDoNotReachTheIntegratorURL(t *testing.T) {
	rg := newRig11(t, func(c *rigConfig) { c.opts.LaunchURL = rigLaunchURL + "?from=config" })
	form := rg.lms.Launch11(rg.ltiop.URL+paths.Launch, "u", nil)
	moved := url.Values{}
	for _, k := range []string{"user_id", "custom_chapter", "roles"} {
		moved[k] = form[k]
		form.Del(k)
	}
	res := rg.postForm(t, browser(), paths.Launch+"?"+moved.Encode(), form, true)
	if res.Status != http.StatusSeeOther {
		t.Fatalf("the moved form was refused (%d %s): the attack needs the signature to hold", res.Status, res.Body)
	}
	loc := res.Location(t)
	for k := range moved {
		if loc.Query().Has(k) {
			t.Errorf("%s, moved from the signed body into the query, reached the integrator's URL", k)
		}
	}
	if loc.Query().Get("from") != "config" || loc.Query().Get("ltik") == "" {
		t.Errorf("went to %s, want the configured launch URL's own query and the ltik", loc)
	}
}

// Every refusal of an LTI 1.1 launch has its code, issues no ltik and uses no nonce.
func TestLTI11LaunchRefusals(t *testing.T) {
	rg := newRig11(t)
	launchURL := rg.ltiop.URL + paths.Launch
	good := func() url.Values { return rg.lms.Launch11(launchURL, "u", nil) }
	with := func(f url.Values, k, v string) url.Values { f = cloneValues(f); f.Set(k, v); return f }
	without := func(f url.Values, k string) url.Values { f = cloneValues(f); f.Del(k); return f }

	for _, tc := range []struct {
		rule, name string
		form       func() url.Values
		status     int
		code       string
	}{
		{"LTI11-SIG-01", "a parameter changed after signing", func() url.Values { return with(good(), "roles", "Administrator") }, 401, lti11.CodeInvalidSignature},
		{"LTI11-SIG-01", "a forged signature", func() url.Values { return with(good(), "oauth_signature", "AAAAAAAAAAAAAAAAAAAAAAAAAAA=") }, 401, lti11.CodeInvalidSignature},
		{"LTI11-SIG-03", "signed for the internal URL a proxy forwards to", func() url.Values {
			return rg.lms.Launch11("http://10.0.0.7:8080"+paths.Launch, "u", nil)
		}, 401, lti11.CodeInvalidSignature},
		{"LTI11-SIG-02", "PLAINTEXT", func() url.Values { return with(good(), "oauth_signature_method", "PLAINTEXT") }, 400, lti11.CodeUnsupportedSignatureMethod},
		{"LTI11-KEY-01", "an unknown consumer key", func() url.Values { return with(good(), "oauth_consumer_key", "someone-else") }, 401, lti11.CodeUnknownConsumerKey},
		{"LTI11-TS-01", "a stale timestamp", func() url.Values {
			return rg.lms.Launch11(launchURL, "u", url.Values{}) // signed now; the tool's clock runs 6 minutes ahead below
		}, 401, lti11.CodeStaleTimestamp},
		{"LTI11-PARAM-01", "no resource_link_id", func() url.Values { return without(good(), "resource_link_id") }, 400, lti11.CodeMissingParameters},
		{"LTI11-PARAM-01", "no lti_version", func() url.Values { return without(good(), "lti_version") }, 400, lti11.CodeMissingParameters},
		{"LTI11-PARAM-01", "a content-item message", func() url.Values { return with(good(), "lti_message_type", "ContentItemSelectionRequest") }, 400, lti11.CodeInvalidMessageType},
		{"LTI11-PARAM-02", "no oauth_nonce", func() url.Values { return without(good(), "oauth_nonce") }, 400, lti11.CodeMissingParameters},
		{"LTI11-PARAM-02", "no oauth_signature", func() url.Values { return without(good(), "oauth_signature") }, 400, lti11.CodeMissingParameters},
	} {
		t.Run(tc.rule+" "+tc.name, func(t *testing.T) {
			form := tc.form()
			if tc.code == lti11.CodeStaleTimestamp {
				rg.clock.Advance(6 * time.Minute)
				defer rg.clock.Advance(-6 * time.Minute)
			}
			testhttp.WantRefusal(t, rg.launch11(t, form), tc.status, tc.code)
		})
	}

	t.Run("LTI11-NONCE-01 a replayed launch", func(t *testing.T) {
		form := good()
		tampered := with(form, "user_id", "mallory")
		// A refused signature records nothing: the genuine form still launches once.
		testhttp.WantRefusal(t, rg.launch11(t, tampered), 401, lti11.CodeInvalidSignature)
		if res := rg.launch11(t, form); res.Status != http.StatusSeeOther {
			t.Fatalf("first use: %d %s", res.Status, res.Body)
		}
		testhttp.WantRefusal(t, rg.launch11(t, form), 401, lti11.CodeNonceReused)
	})

	t.Run("LTI11-KEY-02 a registration whose secret cannot be read", func(t *testing.T) {
		rg.reg.ForgetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lti11-secret"}})
		testhttp.WantRefusal(t, rg.launch11(t, good()), 503, toolmode.CodeLTI11SecretMissing)
	})

	t.Run("LTI11-KEY-01 an inactive registration", func(t *testing.T) {
		rg.update(func(pr *ltiv1.PlatformRegistration) { f := false; pr.Spec.Active = &f })
		testhttp.WantRefusal(t, rg.launch11(t, good()), 401, lti11.CodeUnknownConsumerKey)
	})
}

// LTI11-KEY-03: a second registration holding the consumer key (two objects written with
// kubectl, or two API creates that both passed the API's check) makes the key ambiguous:
// launches are refused, whichever holder's secret signed them, where the oldest used to
// answer; once one holder is gone the other launches again.
func TestLTI11AmbiguousConsumerKeyRefused(t *testing.T) {
	rg := newRig11(t)
	launchURL := rg.ltiop.URL + paths.Launch
	other := rg.pr.DeepCopy()
	other.Name, other.UID = "another-tenant", "uid-another-tenant"
	other.CreationTimestamp = metav1.NewTime(rg.pr.CreationTimestamp.Add(time.Hour)) // the younger one
	other.Spec.URL, other.Spec.ClientID = "https://another-tenant.example.com", "another-client"
	other.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: rigConsumerKey, SharedSecret: ltiv1.SecretKeyRef{Name: "another-secret"}}
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "another-secret", Labels: map[string]string{ltiv1.LabelManagedBy: ltiv1.ManagedByValue}},
		Data:       map[string][]byte{ltiv1.LTI11SecretKey: []byte("another tenant's secret")},
	})
	rg.reg.Apply(other)

	res := rg.launch11(t, rg.lms.Launch11(launchURL, "u", nil))
	testhttp.WantRefusal(t, res, http.StatusServiceUnavailable, lti11.CodeAmbiguousConsumerKey)
	if strings.Contains(res.Body, "another-tenant") {
		t.Error("the refusal names the other holder to whoever sent the launch")
	}
	intruder, err := lmssim.New("https://another-tenant.example.com", "another-client", "d")
	if err != nil {
		t.Fatal(err)
	}
	intruder.EnableLTI11(rigConsumerKey, "another tenant's secret")
	testhttp.WantRefusal(t, rg.launch11(t, intruder.Launch11(launchURL, "u", nil)), http.StatusServiceUnavailable, lti11.CodeAmbiguousConsumerKey)

	rg.reg.Forget(other)
	if res := rg.launch11(t, rg.lms.Launch11(launchURL, "u", nil)); res.Status != http.StatusSeeOther {
		t.Fatalf("once one holder is left: %d %s", res.Status, res.Body)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// LTI11-OUT-01: Basic Outcomes through /api/outcomes reach the LMS signed (the simulator
// checks the OAuth signature, the body hash and the nonce), with the ltik or the service key.
func TestBasicOutcomes(t *testing.T) {
	rg := newRig11(t)
	ltik := rg.launch11Ltik(t, "u11")
	key := rg.serviceKeyOf(t, ltik)
	sourced := lmssim.SourcedID("u11")

	if res := rg.call(t, nil, "PUT", "/api/outcomes", ltikAuth(ltik), map[string]any{"score": 0.85, "text": "well done"}); res.Status != http.StatusNoContent {
		t.Fatalf("replace: %d %s", res.Status, res.Body)
	}
	if got, ok := rg.lms.Outcome(sourced); !ok || got != "0.85" {
		t.Fatalf("the LMS holds %q %v, want 0.85", got, ok)
	}
	read := rg.call(t, nil, "GET", "/api/outcomes", serviceAuth(key), nil)
	if read.Status != http.StatusOK || read.JSON(t)["score"] != 0.85 {
		t.Fatalf("read: %d %s", read.Status, read.Body)
	}

	for _, bad := range []any{map[string]any{"score": 1.5}, map[string]any{"score": -0.1}, map[string]any{"text": "no score"}, map[string]any{"score": "0.5"}} {
		res := rg.call(t, nil, "PUT", "/api/outcomes", ltikAuth(ltik), bad)
		if res.Status != http.StatusBadRequest {
			t.Fatalf("%v: %d %s", bad, res.Status, res.Body)
		}
	}
	if got, _ := rg.lms.Outcome(sourced); got != "0.85" {
		t.Fatalf("a refused score changed the LMS's to %q", got)
	}

	// The LMS refuses: its imsx_codeMajor and description reach the integrator.
	rg.interceptLMS(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != lmssim.OutcomesPath {
			return false
		}
		w.Header().Set("Content-Type", pox.ContentType)
		_, _ = w.Write(pox.ResponseBody(pox.OpReplace, "x", "y", "failure", "The assignment is closed.", ""))
		return true
	})
	res := rg.call(t, nil, "PUT", "/api/outcomes", ltikAuth(ltik), map[string]any{"score": 0.5})
	testhttp.WantError(t, res, http.StatusBadGateway, toolmode.CodeOutcomeRefused)
	var env struct {
		Details struct {
			ExternalError bool   `json:"externalError"`
			UpstreamBody  string `json:"upstreamBody"`
		} `json:"details"`
	}
	_ = json.Unmarshal([]byte(res.Body), &env)
	if !env.Details.ExternalError || !strings.Contains(env.Details.UpstreamBody, "The assignment is closed.") {
		t.Fatalf("the LMS's description is not passed on: %s", res.Body)
	}
	rg.intercept.Store(nil)

	if res := rg.call(t, nil, "DELETE", "/api/outcomes", ltikAuth(ltik), nil); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	if _, ok := rg.lms.Outcome(sourced); ok {
		t.Fatal("deleteResult left the score")
	}
	if read := rg.call(t, nil, "GET", "/api/outcomes", ltikAuth(ltik), nil); read.Status != http.StatusOK || read.JSON(t)["score"] != nil {
		t.Fatalf("read after delete: %d %s", read.Status, read.Body)
	}
}

// LTI11-OUT-02: a launch without lis_outcome_service_url (and every 1.3 launch without the
// basicoutcome claim) has no outcomes service.
func TestBasicOutcomesNotAvailable(t *testing.T) {
	rg := newRig11(t)
	res := rg.launch11(t, rg.lms.Launch11(rg.ltiop.URL+paths.Launch, "u", url.Values{"lis_outcome_service_url": {""}}))
	ltik := res.Location(t).Query().Get("ltik")
	tok := rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil).JSON(t)
	if jsonPath(tok, "services", "outcomes", "available") != false {
		t.Fatalf("outcomes available without an outcome service: %v", tok["services"])
	}
	testhttp.WantError(t, rg.call(t, nil, "PUT", "/api/outcomes", ltikAuth(ltik), map[string]any{"score": 1}), http.StatusForbidden, toolmode.CodeServiceNotAvailable)
}

// LTI11-MIG-02: the lti1p1 claim of a 1.3 launch is verified with the registration's 1.1
// secret; only a verified claim gives user.lti11LegacyUserId.
func TestMigrationClaim(t *testing.T) {
	rg := newRig11(t, func(c *rigConfig) { c.services = true })
	legacy := func(ltik string) map[string]any {
		return rg.call(t, nil, "GET", "/api/idtoken", ltikAuth(ltik), nil).JSON(t)
	}
	tok := legacy(rg.launchWith(t, nil))
	for path, want := range map[string]any{
		"lti11.verified": true, "lti11.status": lti11.StatusVerified, "lti11.userId": "legacy-u",
		"lti11.consumerKey": rigConsumerKey, "lti11.contextId": "course-42", "user.lti11LegacyUserId": "legacy-u",
		"ltiVersion": "1.3.0",
	} {
		if got := jsonPath(tok, strings.Split(path, ".")...); got != want {
			t.Errorf("verified claim: %s = %v, want %v", path, got, want)
		}
	}

	for _, tc := range []struct {
		name, status string
		claim        map[string]any
	}{
		{"forged sign", lti11.StatusInvalid, map[string]any{"user_id": "victim", "oauth_consumer_key": rigConsumerKey, "oauth_consumer_key_sign": "bm90IGEgc2lnbg=="}},
		{"unsigned", lti11.StatusUnsigned, map[string]any{"user_id": "victim", "oauth_consumer_key": rigConsumerKey}},
		{"another consumer", lti11.StatusKeyMismatch, map[string]any{"user_id": "victim", "oauth_consumer_key": "other", "oauth_consumer_key_sign": "bm90IGEgc2lnbg=="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := legacy(rg.launchWith(t, func(c map[string]any) { c["https://purl.imsglobal.org/spec/lti/claim/lti1p1"] = tc.claim }))
			if jsonPath(tok, "lti11", "verified") != false || jsonPath(tok, "lti11", "status") != tc.status {
				t.Fatalf("lti11 = %v, want unverified %s", tok["lti11"], tc.status)
			}
			if _, ok := jsonPath(tok, "user").(map[string]any)["lti11LegacyUserId"]; ok {
				t.Fatal("an unverified claim gave user.lti11LegacyUserId")
			}
		})
	}
}

// NRPS lti11_legacy_user_id reaches /api/memberships as lti11LegacyUserId.
func TestMembershipsCarryTheLegacyUserID(t *testing.T) {
	rg := newRig11(t, func(c *rigConfig) { c.services = true })
	members := lmssim.DefaultMembers()
	members[0].LTI11LegacyUserID = "legacy-0"
	rg.lms.Members = members
	ltik := rg.launchWith(t, nil)
	res := rg.call(t, nil, "GET", "/api/memberships", ltikAuth(ltik), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("memberships: %d %s", res.Status, res.Body)
	}
	list, _ := res.JSON(t)["members"].([]any)
	found := false
	for _, m := range list {
		mm := m.(map[string]any)
		if mm["userId"] == members[0].UserID {
			found = mm["lti11LegacyUserId"] == "legacy-0"
		}
	}
	if !found {
		t.Fatalf("member %s lacks lti11LegacyUserId: %s", members[0].UserID, res.Body)
	}
}

// BenchmarkLTI11Launch: an LTI 1.1 launch over loopback, from the form post to the 303 with
// the ltik; the simulator signs each form with the timer stopped (the LMS's work).
// "server-µs/op" is the time inside ltiop's handlers.
func BenchmarkLTI11Launch(b *testing.B) { benchmarkLTI11Launch(b, newRig11(b)) }

// benchmarkLTI11Launch times LTI 1.1 launches on rg.
func benchmarkLTI11Launch(b *testing.B, rg *rig) {
	client := benchClient()
	rg.server.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		form := rg.lms.Launch11(rg.ltiop.URL+paths.Launch, "u", nil)
		b.StartTimer()
		if res := rg.postForm(b, client, paths.Launch, form, true); res.Status != http.StatusSeeOther {
			b.Fatalf("launch: %d %s", res.Status, res.Body)
		}
	}
	b.ReportMetric(float64(rg.server.Load())/float64(b.N)/1e3, "server-µs/op")
}

// LTI11-OUT-03: lis_outcome_service_url comes from the launch; when it points inside the
// network, the outbound policy refuses it: nothing is sent there (no signed POX), and the
// integrator learns only URL_NOT_ALLOWED.
func TestOutcomeServiceURLOnAnInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	rg := newRig11(t, func(c *rigConfig) { c.http = advantage.HTTPClient(testoutbound.Public()) })
	form := rg.lms.Launch11(rg.ltiop.URL+paths.Launch, "u", url.Values{"lis_outcome_service_url": {internal.URL + "/outcomes"}})
	res := rg.launch11(t, form)
	ltik := res.Location(t).Query().Get("ltik")
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		var body any
		if method == "PUT" {
			body = map[string]any{"score": 1}
		}
		wantNotEchoed(t, rg.call(t, nil, method, "/api/outcomes", ltikAuth(ltik), body), http.StatusBadGateway, httpapi.CodeURLNotAllowed)
	}
	if n := internal.Hits.Load(); n != 0 {
		t.Fatalf("the internal address received %d requests", n)
	}
}
