package lti11

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RFC's own example is HMAC-SHA1
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver/lti"
)

// The example of OAuth Core 1.0 Appendix A.5 (also RFC 5849's photos example): the base
// string, and its HMAC-SHA1 with the consumer and token secrets.
func TestBaseStringMatchesTheSpecExample(t *testing.T) {
	params := Params{
		{"file", "vacation.jpg"}, {"size", "original"},
		{"oauth_consumer_key", "dpf43f3p2l4k3l03"}, {"oauth_token", "nnch734d00sl2jdk"},
		{"oauth_signature_method", "HMAC-SHA1"}, {"oauth_signature", "ignored"},
		{"oauth_timestamp", "1191242096"}, {"oauth_nonce", "kllo9940pd9333jh"}, {"oauth_version", "1.0"},
	}
	base, err := BaseURI("HTTP://Photos.Example.NET:80/photos?file=vacation.jpg")
	if err != nil || base != "http://photos.example.net/photos" {
		t.Fatalf("BaseURI = %q, %v", base, err)
	}
	got := BaseString("GET", base, params)
	want := "GET&http%3A%2F%2Fphotos.example.net%2Fphotos&file%3Dvacation.jpg%26oauth_consumer_key%3Ddpf43f3p2l4k3l03%26oauth_nonce%3Dkllo9940pd9333jh%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D1191242096%26oauth_token%3Dnnch734d00sl2jdk%26oauth_version%3D1.0%26size%3Doriginal"
	if got != want {
		t.Fatalf("base string\n got %s\nwant %s", got, want)
	}
	m := hmac.New(sha1.New, []byte("kd94hf93k423kf44&pfkkdhi9sl3r4s00"))
	m.Write([]byte(got))
	if sig := base64.StdEncoding.EncodeToString(m.Sum(nil)); sig != "tR3+Ty81lMeYAr/Fid0kMTYa/WM=" {
		t.Fatalf("signature %s", sig)
	}
}

func TestEncode(t *testing.T) {
	for in, want := range map[string]string{
		"abcABC123-._~": "abcABC123-._~",
		"a b+c&d=e/f":   "a%20b%2Bc%26d%3De%2Ff",
		"é":             "%C3%A9",
		"*!'()":         "%2A%21%27%28%29",
	} {
		if got := Encode(in); got != want {
			t.Errorf("Encode(%q) = %q, want %q", in, got, want)
		}
	}
}

const (
	launchURL = "https://tool.example.com/lti/launch"
	key       = "consumer-1"
	secret    = "s3cr&t with spaces"
)

// signedLaunch is a launch form as an LMS posts it, signed with method at ts.
func signedLaunch(t *testing.T, method string, ts time.Time, extra ...Param) Params {
	t.Helper()
	ps := Params{
		{"lti_message_type", "basic-lti-launch-request"}, {"lti_version", "LTI-1p0"},
		{"resource_link_id", "rl-1"}, {"user_id", "u-1"}, {"roles", "Instructor,urn:lti:instrole:ims/lis/Faculty"},
		{"context_id", "c-1"}, {"custom_color", "blue & green"},
	}
	ps = append(ps, extra...)
	oauth, err := Sign("POST", launchURL, ps, key, secret, method, "nonce-"+strconv.FormatInt(ts.UnixNano(), 10), strconv.FormatInt(ts.Unix(), 10), "")
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
			ps := Params{{"lti_message_type", "basic-lti-launch-request"}}
			oauth, _ := Sign("POST", launchURL+"?course=7", ps, key, secret, MethodHMACSHA1, "n", strconv.FormatInt(now.Unix(), 10), "")
			return append(append(ps, oauth...), Param{"course", "7"})
		}(), launchURL + "?course=7", secret, ""},
		{"wrong secret", "LTI11-SIG-01", signedLaunch(t, MethodHMACSHA1, now), launchURL, "other", CodeInvalidSignature},
		{"tampered parameter", "LTI11-SIG-01", tamper(signedLaunch(t, MethodHMACSHA1, now), "roles", "Administrator"), launchURL, secret, CodeInvalidSignature},
		{"another URL (Host header behind a proxy)", "LTI11-SIG-03", signedLaunch(t, MethodHMACSHA1, now), "http://10.0.0.7:8080/lti/launch", secret, CodeInvalidSignature},
		{"unsupported method", "LTI11-SIG-02", tamper(signedLaunch(t, MethodHMACSHA1, now), "oauth_signature_method", "PLAINTEXT"), launchURL, secret, CodeUnsupportedSignatureMethod},
		{"6 minutes old", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(-6*time.Minute)), launchURL, secret, CodeStaleTimestamp},
		{"6 minutes ahead", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(6*time.Minute)), launchURL, secret, CodeStaleTimestamp},
		{"4 minutes old", "LTI11-TS-01", signedLaunch(t, MethodHMACSHA1, now.Add(-4*time.Minute)), launchURL, secret, ""},
		{"timestamp not a number", "LTI11-TS-01", tamper(signedLaunch(t, MethodHMACSHA1, now), "oauth_timestamp", "soon"), launchURL, secret, CodeStaleTimestamp},
		{"two signatures", "LTI11-SIG-01", append(signedLaunch(t, MethodHMACSHA1, now), Param{"oauth_signature", "x"}), launchURL, secret, CodeInvalidSignature},
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

func TestBodyHash(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte("<xml>score</xml>")
	oauth, err := Sign("POST", "https://lms.example.com/outcomes", nil, key, secret, MethodHMACSHA1, "n1", strconv.FormatInt(now.Unix(), 10), BodyHash(body))
	if err != nil {
		t.Fatal(err)
	}
	ok := Request{Method: "POST", URL: "https://lms.example.com/outcomes", Params: oauth, Body: body, BodyHashed: true}
	if err := Verify(ok, secret, now); err != nil {
		t.Fatalf("LTI11-BODY-01: a matching body refused: %v", err)
	}
	ok.Body = []byte("<xml>SCORE</xml>")
	if err := Verify(ok, secret, now); err == nil || err.Code != CodeBodyHashMismatch {
		t.Fatalf("LTI11-BODY-01: a changed body gave %v, want %s", err, CodeBodyHashMismatch)
	}
	// The header round-trips through Authorization / ParseAuthorization.
	back, okh := ParseAuthorization(`OAuth realm="x", ` + strings.TrimPrefix(Authorization(oauth), "OAuth "))
	if !okh || len(back) != len(oauth) || back.Get("oauth_signature") != oauth.Get("oauth_signature") {
		t.Fatalf("ParseAuthorization(Authorization(p)) = %v, %v", back, okh)
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
	if err := CheckLaunch(append(drop("lti_message_type"), Param{"lti_message_type", "ContentItemSelectionRequest"})); err == nil || err.Code != CodeInvalidMessageType {
		t.Errorf("LTI11-PARAM-01: content item selection: %v", err)
	}
	if err := RequireOAuth(append(drop("oauth_nonce"), Param{"oauth_nonce", strings.Repeat("n", MaxNonceLength+1)})); err == nil {
		t.Error("LTI11-PARAM-02: an overlong nonce was accepted")
	}
}

func TestClaimsMapToTheSimplifiedToken(t *testing.T) {
	ps := Params{
		{"lti_message_type", "basic-lti-launch-request"}, {"lti_version", "LTI-1p0"},
		{"resource_link_id", "rl-1"}, {"resource_link_title", "Week 1"},
		{"user_id", "u-1"}, {"roles", "Instructor, urn:lti:role:ims/lis/TeachingAssistant,urn:lti:instrole:ims/lis/Faculty,bogus"},
		{"lis_person_name_full", "Ada Lovelace"}, {"lis_person_name_given", "Ada"}, {"lis_person_name_family", "Lovelace"},
		{"lis_person_contact_email_primary", "ada@example.edu"},
		{"context_id", "c-1"}, {"context_label", "CS1"}, {"context_title", "Computing"}, {"context_type", "CourseSection"},
		{"launch_presentation_document_target", "iframe"}, {"launch_presentation_return_url", "https://lms.example.edu/back"},
		{"launch_presentation_width", "800"}, {"launch_presentation_locale", "en-GB"},
		{"custom_color", "blue"}, {"tool_consumer_info_product_family_code", "moodle"}, {"tool_consumer_instance_guid", "lms.example.edu"},
		{"lis_outcome_service_url", "https://lms.example.edu/outcomes"}, {"lis_result_sourcedid", "src-1"},
		{"oauth_consumer_key", key}, {"oauth_signature", "sig"},
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

// The LTI 1.3 Migration Guide's own example of oauth_consumer_key_sign.
func TestConsumerKeySignMatchesTheMigrationGuide(t *testing.T) {
	got := ConsumerKeySign("179248902", "689302", "https://lmsvendor.com", "PM48OJSfGDTAzAo", 1551290856, "172we8671fd8z", "my-lti11-secret")
	if got != "lWd54kFo5qU7xshAna6v8BwoBm6tmUjc6GTax6+12ps=" {
		t.Fatalf("LTI11-MIG-01: sign = %s", got)
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

func TestPOXRoundTrip(t *testing.T) {
	req, err := POXRequest(OpReplace, "m-1", "src<1>", Outcome{Score: 0.85, Text: "well done & more"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParsePOXRequest(req)
	if err != nil || info.Op != OpReplace || info.SourcedID != "src<1>" || info.Score != "0.85" || info.Text != "well done & more" || info.MessageID != "m-1" {
		t.Fatalf("%+v %v\n%s", info, err, req)
	}
	if _, err := POXRequest(OpReplace, "m", "s", Outcome{Score: 1.5}); err == nil {
		t.Fatal("a score above 1 was built")
	}
	res, err := ParsePOXResponse(POXResponseBody(OpRead, "r-1", "m-1", "success", "ok", "0.5"))
	if err != nil || !res.Success() || !res.HasScore || res.Score != 0.5 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = ParsePOXResponse(POXResponseBody(OpReplace, "r-2", "m-2", "failure", "sourcedid unknown", ""))
	if err != nil || res.Success() || res.Description != "sourcedid unknown" {
		t.Fatalf("%+v %v", res, err)
	}
	for _, bad := range []string{"", "<html>oops</html>", "<imsx_POXEnvelopeResponse/>"} {
		if _, err := ParsePOXResponse([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add(`OAuth oauth_consumer_key="k", oauth_signature="a%2Bb"`)
	f.Fuzz(func(t *testing.T, h string) {
		ps, ok := ParseAuthorization(h)
		if !ok {
			return
		}
		back, ok := ParseAuthorization(Authorization(ps))
		if !ok || len(back) != len(ps) {
			t.Fatalf("round trip of %q failed", h)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	t := &testing.T{}
	ps := signedLaunch(t, MethodHMACSHA1, now)
	u, _ := url.Parse(launchURL)
	r := Request{Method: "POST", URL: u.String(), Params: ps}
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(r, secret, now); err != nil {
			b.Fatal(err)
		}
	}
}
