package lti11

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

const (
	launchURL = "https://tool.example.com/lti/launch"
	key       = "consumer-1"
	secret    = "s3cr&t with spaces"
)

// signedLaunch is a launch form as an LMS posts it, signed with method at ts.
func signedLaunch(t *testing.T, method string, ts time.Time, extra ...Param) Params {
	t.Helper()
	ps := Params{
		{Name: "lti_message_type", Value: "basic-lti-launch-request"}, {Name: "lti_version", Value: "LTI-1p0"},
		{Name: "resource_link_id", Value: "rl-1"}, {Name: "user_id", Value: "u-1"}, {Name: "roles", Value: "Instructor,urn:lti:instrole:ims/lis/Faculty"},
		{Name: "context_id", Value: "c-1"}, {Name: "custom_color", Value: "blue & green"},
	}
	ps = append(ps, extra...)
	oauth, err := oauth1.Sign("POST", launchURL, ps, key, secret, method, "nonce-"+strconv.FormatInt(ts.UnixNano(), 10), strconv.FormatInt(ts.Unix(), 10), "")
	if err != nil {
		t.Fatal(err)
	}
	return append(ps, oauth...)
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tamper := func(ps Params, name, value string) Params {
		out := append(Params{}, ps...)
		for i := range out {
			if out[i].Name == name {
				out[i].Value = value
			}
		}
		return out
	}
	for _, tc := range []struct {
		name, rule string
		params     Params
		url        string
		secret     string
		want       string
	}{
		{"HMAC-SHA1 accepted", "LTI11-SIG-01", signedLaunch(t, MethodHMACSHA1, now), launchURL, secret, ""},
		{"HMAC-SHA256 accepted", "LTI11-SIG-02", signedLaunch(t, MethodHMACSHA256, now), launchURL, secret, ""},
		{"a query on the launch URL is signed too", "LTI11-SIG-01", func() Params {
			ps := Params{{Name: "lti_message_type", Value: "basic-lti-launch-request"}}
			oauth, _ := oauth1.Sign("POST", launchURL+"?course=7", ps, key, secret, MethodHMACSHA1, "n", strconv.FormatInt(now.Unix(), 10), "")
			return append(append(ps, oauth...), Param{Name: "course", Value: "7"})
		}(), launchURL + "?course=7", secret, ""},
		{"wrong secret", "LTI11-SIG-01", signedLaunch(t, MethodHMACSHA1, now), launchURL, "other", CodeInvalidSignature},
		{"tampered parameter", "LTI11-SIG-01", tamper(signedLaunch(t, MethodHMACSHA1, now), "roles", "Administrator"), launchURL, secret, CodeInvalidSignature},
		{"another URL (Host header behind a proxy)", "LTI11-SIG-03", signedLaunch(t, MethodHMACSHA1, now), "http://10.0.0.7:8080/lti/launch", secret, CodeInvalidSignature},
		{"unsupported method", "LTI11-SIG-02", tamper(signedLaunch(t, MethodHMACSHA1, now), "oauth_signature_method", "PLAINTEXT"), launchURL, secret, CodeUnsupportedSignatureMethod},
		{"6 minutes old", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(-6*time.Minute)), launchURL, secret, CodeStaleTimestamp},
		{"6 minutes ahead", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(6*time.Minute)), launchURL, secret, CodeStaleTimestamp},
		{"4 minutes old", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(-4*time.Minute)), launchURL, secret, ""},
		{"timestamp not a number", "LTI11-TS-01", tamper(signedLaunch(t, MethodHMACSHA1, now), "oauth_timestamp", "soon"), launchURL, secret, CodeStaleTimestamp},
		{"two signatures", "LTI11-SIG-01", append(signedLaunch(t, MethodHMACSHA1, now), Param{Name: "oauth_signature", Value: "x"}), launchURL, secret, CodeInvalidSignature},
	} {
		t.Run(tc.rule+" "+tc.name, func(t *testing.T) {
			err := Verify(Request{Method: "POST", URL: tc.url, Params: tc.params}, tc.secret, now)
			if got := ""; err != nil {
				got = err.Code
				if got != tc.want {
					t.Fatalf("got %s, want %q", err, tc.want)
				}
			} else if tc.want != "" {
				t.Fatalf("accepted, want %s", tc.want)
			}
		})
	}
}

func TestRequireOAuthAndCheckLaunch(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	full := signedLaunch(t, MethodHMACSHA1, now)
	if err := RequireOAuth(full); err != nil {
		t.Fatal(err)
	}
	if err := CheckLaunch(full); err != nil {
		t.Fatal(err)
	}
	drop := func(name string) Params {
		var out Params
		for _, p := range full {
			if p.Name != name {
				out = append(out, p)
			}
		}
		return out
	}
	for _, name := range []string{"oauth_consumer_key", "oauth_nonce", "oauth_timestamp", "oauth_signature", "oauth_signature_method"} {
		if err := RequireOAuth(drop(name)); err == nil || err.Code != CodeMissingParameters || !strings.Contains(err.Description, name) {
			t.Errorf("LTI11-PARAM-02: without %s: %v", name, err)
		}
	}
	for _, name := range []string{"lti_version", "resource_link_id"} {
		if err := CheckLaunch(drop(name)); err == nil || err.Code != CodeMissingParameters || !strings.Contains(err.Description, name) {
			t.Errorf("LTI11-PARAM-01: without %s: %v", name, err)
		}
	}
	if err := CheckLaunch(append(drop("lti_message_type"), Param{Name: "lti_message_type", Value: "ContentItemSelectionRequest"})); err == nil || err.Code != CodeInvalidMessageType {
		t.Errorf("LTI11-PARAM-01: content item selection: %v", err)
	}
	if err := CheckLaunch(append(drop("user_id"), Param{Name: "user_id", Value: "\xff"})); err == nil || err.Code != CodeInvalidParameters {
		t.Errorf("LTI11-PARAM-03: a user_id that is not UTF-8: %v", err)
	}
	if err := RequireOAuth(append(drop("oauth_nonce"), Param{Name: "oauth_nonce", Value: strings.Repeat("n", oauth1.MaxNonceLength+1)})); err == nil {
		t.Error("LTI11-PARAM-02: an overlong nonce was accepted")
	}
}

func TestClaimsMapToTheSimplifiedToken(t *testing.T) {
	ps := Params{
		{Name: "lti_message_type", Value: "basic-lti-launch-request"}, {Name: "lti_version", Value: "LTI-1p0"},
		{Name: "resource_link_id", Value: "rl-1"}, {Name: "resource_link_title", Value: "Week 1"},
		{Name: "user_id", Value: "u-1"}, {Name: "roles", Value: "Instructor, urn:lti:role:ims/lis/TeachingAssistant,urn:lti:instrole:ims/lis/Faculty,bogus"},
		{Name: "lis_person_name_full", Value: "Ada Lovelace"}, {Name: "lis_person_name_given", Value: "Ada"}, {Name: "lis_person_name_family", Value: "Lovelace"},
		{Name: "lis_person_contact_email_primary", Value: "ada@example.edu"},
		{Name: "context_id", Value: "c-1"}, {Name: "context_label", Value: "CS1"}, {Name: "context_title", Value: "Computing"}, {Name: "context_type", Value: "CourseSection"},
		{Name: "launch_presentation_document_target", Value: "iframe"}, {Name: "launch_presentation_return_url", Value: "https://lms.example.edu/back"},
		{Name: "launch_presentation_width", Value: "800"}, {Name: "launch_presentation_locale", Value: "en-GB"},
		{Name: "custom_color", Value: "blue"}, {Name: "tool_consumer_info_product_family_code", Value: "moodle"}, {Name: "tool_consumer_instance_guid", Value: "lms.example.edu"},
		{Name: "lis_outcome_service_url", Value: "https://lms.example.edu/outcomes"}, {Name: "lis_result_sourcedid", Value: "src-1"},
		{Name: "oauth_consumer_key", Value: key}, {Name: "oauth_signature", Value: "sig"},
	}
	raw := Claims(ps, Origin{Issuer: "https://lms.example.edu", ClientID: "client", TargetLinkURI: launchURL})
	c, err := lti.ParseValidatedClaims(raw)
	if err != nil {
		t.Fatal(err)
	}
	tok := lti.SimplifiedIDToken(c, lti.PlatformInfo{ID: "p", URL: "https://lms.example.edu", ClientID: "client", Name: "LMS"})
	got, _ := json.Marshal(tok)
	for _, want := range []string{
		`"user":{"id":"u-1","roles":["Instructor","http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant","http://purl.imsglobal.org/vocab/lis/v2/institution/person#Faculty"],"email":"ada@example.edu","name":"Ada Lovelace","givenName":"Ada","familyName":"Lovelace"}`,
		`"deploymentId":"consumer-1"`, `"productFamilyCode":"moodle"`, `"guid":"lms.example.edu"`,
		`"type":"LtiResourceLinkRequest","target":"https://tool.example.com/lti/launch"`,
		`"context":{"id":"c-1","label":"CS1","title":"Computing","type":["CourseSection"]}`,
		`"resourceLink":{"id":"rl-1","title":"Week 1"}`,
		`"presentation":{"locale":"en-GB","document_target":"iframe","returnUrl":"https://lms.example.edu/back","width":800}`,
		`"custom":{"color":"blue"}`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("simplified token lacks %s\n%s", want, got)
		}
	}
	if c.BasicOutcome == nil || c.BasicOutcome.ServiceURL != "https://lms.example.edu/outcomes" || c.BasicOutcome.SourcedID != "src-1" {
		t.Errorf("basic outcome claim: %+v", c.BasicOutcome)
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(raw, &all)
	if strings.Contains(string(all[ClaimParams]), "oauth_signature\"") || !strings.Contains(string(all[ClaimParams]), `"user_id":"u-1"`) {
		t.Errorf("raw parameters: %s", all[ClaimParams])
	}
}

func TestMigration(t *testing.T) {
	claims := func(sign string, key string) *lti.Claims {
		b, _ := json.Marshal(map[string]any{
			"iss": "https://lmsvendor.com", "aud": "PM48OJSfGDTAzAo", "exp": 1551290856, "nonce": "172we8671fd8z",
			lti.ClaimDeploymentID: "689302",
			lti.ClaimLTI1p1:       map[string]any{"user_id": 34212, "oauth_consumer_key": key, "oauth_consumer_key_sign": sign, "resource_link_id": "rl"},
		})
		c, err := lti.ParseValidatedClaims(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	good := "lWd54kFo5qU7xshAna6v8BwoBm6tmUjc6GTax6+12ps="
	for _, tc := range []struct {
		name       string
		c          *lti.Claims
		key, sec   string
		wantStatus string
	}{
		{"verified", claims(good, "179248902"), "179248902", "my-lti11-secret", StatusVerified},
		{"wrong secret", claims(good, "179248902"), "179248902", "other", StatusInvalid},
		{"forged sign", claims("AAAA"+good[4:], "179248902"), "179248902", "my-lti11-secret", StatusInvalid},
		{"unsigned", claims("", "179248902"), "179248902", "my-lti11-secret", StatusUnsigned},
		{"no secret", claims(good, "179248902"), "", "", StatusNoSecret},
		{"another consumer key", claims(good, "999"), "179248902", "my-lti11-secret", StatusKeyMismatch},
	} {
		t.Run("LTI11-MIG-02 "+tc.name, func(t *testing.T) {
			st, ok := Migration(tc.c, "PM48OJSfGDTAzAo", tc.key, tc.sec)
			if !ok || st != tc.wantStatus {
				t.Fatalf("got %s %v, want %s", st, ok, tc.wantStatus)
			}
			if tc.c.LTI1p1.UserID != "34212" {
				t.Fatalf("numeric user_id read as %q", tc.c.LTI1p1.UserID)
			}
		})
	}
}

// Whatever a signed launch carries, its claims are one JSON object the ltik's decoder reads
// back, with the launch's ids where the simplified token expects them.
func FuzzClaims(f *testing.F) {
	f.Add("u", "Instructor,Learner", "c", "rl", "custom_x", "v")
	f.Fuzz(func(t *testing.T, user, roles, context, link, name, value string) {
		ps := Params{{Name: "user_id", Value: user}, {Name: "roles", Value: roles}, {Name: "context_id", Value: context},
			{Name: "resource_link_id", Value: link}, {Name: name, Value: value}}
		if CheckLaunch(append(ps, Param{Name: "lti_message_type", Value: MessageBasicLaunch}, Param{Name: "lti_version", Value: "LTI-1p0"})) != nil {
			return // refused: never mapped
		}
		c, err := lti.ParseValidatedClaims(Claims(ps, Origin{Issuer: "https://lms", ClientID: "c", TargetLinkURI: "https://tool/lti/launch"}))
		if err != nil {
			t.Fatalf("claims of %v: %v", ps, err)
		}
		if c.ResourceLink == nil || c.ResourceLink.ID != link || (context != "" && (c.Context == nil || c.Context.ID != context)) {
			t.Fatalf("ids lost: %+v %+v", c.ResourceLink, c.Context)
		}
	})
}

// LTI11-LAUNCH-01: the launch URL serves both versions; only a form naming an LTI 1.x
// message type without an id_token is a 1.1 launch.
func TestIsLaunch(t *testing.T) {
	for _, tc := range []struct {
		form url.Values
		want bool
	}{
		{url.Values{"lti_message_type": {MessageBasicLaunch}, "oauth_consumer_key": {key}}, true},
		{url.Values{"lti_message_type": {"ContentItemSelectionRequest"}}, true}, // refused later, by CheckLaunch
		{url.Values{"id_token": {"x.y.z"}, "state": {"s"}}, false},
		{url.Values{"lti_message_type": {MessageBasicLaunch}, "id_token": {"x.y.z"}}, false},
		{url.Values{}, false},
	} {
		if got := IsLaunch(tc.form); got != tc.want {
			t.Errorf("IsLaunch(%v) = %v, want %v", tc.form, got, tc.want)
		}
	}
}

// LTI11-LAUNCH-01: /api/idtoken?raw=true of a 1.1 launch answers the parameters Claims
// kept under ClaimParams, without the signature, with ltiVersion.
func TestRawParamsReadsWhatClaimsKept(t *testing.T) {
	raw := Claims(signedLaunch(t, MethodHMACSHA1, time.Unix(1_700_000_000, 0)), Origin{Issuer: "https://lms", ClientID: "c", TargetLinkURI: launchURL})
	got, err := RawParams(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(got["user_id"]) != `"u-1"` || string(got["context_id"]) != `"c-1"` || string(got["ltiVersion"]) != `"`+Version+`"` {
		t.Errorf("raw parameters: %v", got)
	}
	if _, ok := got["oauth_signature"]; ok {
		t.Error("raw parameters carry oauth_signature")
	}
	if _, ok := got["oauth_nonce"]; !ok {
		t.Error("raw parameters lost oauth_nonce")
	}
	if _, err := RawParams(json.RawMessage(`[`)); err == nil {
		t.Error("RawParams of broken claims: no error")
	}
}

// LTI11-MIG-02: the lti11 member of /api/idtoken. A 1.1 launch vouches for its own ids; a
// 1.3 launch's legacy ids are verified only with the registration's secret.
func TestIdentity(t *testing.T) {
	parse := func(m map[string]any) *lti.Claims {
		b, _ := json.Marshal(m)
		c, err := lti.ParseValidatedClaims(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c11 := parse(map[string]any{"iss": "https://lms", "sub": "u-1", lti.ClaimDeploymentID: key,
		lti.ClaimResourceLink: map[string]any{"id": "rl-1"}, lti.ClaimContext: map[string]any{"id": "c-1"},
		lti.ClaimToolPlatform: map[string]any{"guid": "lms.example.edu"}})
	if got := Identity(c11, true, "client", key, secret); *got != (lti.IDTokenLTI11{Verified: true, Status: StatusLaunch,
		ConsumerKey: key, UserID: "u-1", ResourceLinkID: "rl-1", ContextID: "c-1", ToolConsumerInstanceGUID: "lms.example.edu"}) {
		t.Errorf("1.1 launch: %+v", got)
	}
	if got := Identity(c11, false, "client", key, secret); got != nil {
		t.Errorf("1.3 launch without legacy claims: %+v, want nil", got)
	}
	legacyOnly := parse(map[string]any{"iss": "https://lms", lti.ClaimLTI11LegacyUserID: "old-7"})
	if got := Identity(legacyOnly, false, "client", key, secret); got == nil || got.Verified || got.Status != StatusUnsigned || got.UserID != "old-7" {
		t.Errorf("lti11_legacy_user_id alone: %+v, want unsigned and not verified", got)
	}
	good := "lWd54kFo5qU7xshAna6v8BwoBm6tmUjc6GTax6+12ps="
	migrated := parse(map[string]any{"iss": "https://lmsvendor.com", "aud": "PM48OJSfGDTAzAo", "exp": 1551290856, "nonce": "172we8671fd8z",
		lti.ClaimDeploymentID: "689302", lti.ClaimLTI11LegacyUserID: "ignored",
		lti.ClaimLTI1p1: map[string]any{"user_id": "34212", "oauth_consumer_key": "179248902", "oauth_consumer_key_sign": good, "context_id": "c-9"}})
	if got := Identity(migrated, false, "PM48OJSfGDTAzAo", "179248902", "my-lti11-secret"); got == nil || !got.Verified || got.Status != StatusVerified ||
		got.UserID != "34212" || got.ConsumerKey != "179248902" || got.ContextID != "c-9" {
		t.Errorf("signed lti1p1 claim: %+v, want verified", got)
	}
	if got := Identity(migrated, false, "PM48OJSfGDTAzAo", "179248902", "other"); got == nil || got.Verified || got.Status != StatusInvalid {
		t.Errorf("signed lti1p1 claim, wrong secret: %+v, want not verified", got)
	}
}
