package oauth1

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the RFC's own example is HMAC-SHA1
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
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
	key    = "consumer-1"
	secret = "s3cr&t with spaces"
)

func TestBodyHash(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte("<xml>score</xml>")
	oauth, err := Sign("POST", "https://lms.example.com/outcomes", nil, key, secret, MethodHMACSHA1, "n1", strconv.FormatInt(now.Unix(), 10), BodyHash(body))
	if err != nil {
		t.Fatal(err)
	}
	ok := Request{Method: "POST", URL: "https://lms.example.com/outcomes", Params: oauth, Body: body, BodyHashed: true}
	if err := Check(ok, secret, now); err != nil {
		t.Fatalf("LTI11-BODY-01: a matching body refused: %v", err)
	}
	ok.Body = []byte("<xml>SCORE</xml>")
	if err := Check(ok, secret, now); !errors.Is(err, ErrBodyHash) {
		t.Fatalf("LTI11-BODY-01: a changed body gave %v, want ErrBodyHash", err)
	}
	// The header round-trips through Authorization / ParseAuthorization.
	back, okh := ParseAuthorization(`OAuth realm="x", ` + strings.TrimPrefix(Authorization(oauth), "OAuth "))
	if !okh || len(back) != len(oauth) || back.Get("oauth_signature") != oauth.Get("oauth_signature") {
		t.Fatalf("ParseAuthorization(Authorization(p)) = %v, %v", back, okh)
	}
}

// The LTI 1.3 Migration Guide's own example of oauth_consumer_key_sign.
func TestConsumerKeySignMatchesTheMigrationGuide(t *testing.T) {
	got := ConsumerKeySign("179248902", "689302", "https://lmsvendor.com", "PM48OJSfGDTAzAo", 1551290856, "172we8671fd8z", "my-lti11-secret")
	if got != "lWd54kFo5qU7xshAna6v8BwoBm6tmUjc6GTax6+12ps=" {
		t.Fatalf("LTI11-MIG-01: sign = %s", got)
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

func BenchmarkCheck(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	ps := Params{{"lti_message_type", "basic-lti-launch-request"}, {"resource_link_id", "rl"}, {"user_id", "u"}}
	oauth, err := Sign("POST", "https://tool.example.com/lti/launch", ps, key, secret, MethodHMACSHA1, "n", strconv.FormatInt(now.Unix(), 10), "")
	if err != nil {
		b.Fatal(err)
	}
	r := Request{Method: "POST", URL: "https://tool.example.com/lti/launch", Params: append(ps, oauth...)}
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(r, secret, now); err != nil {
			b.Fatal(err)
		}
	}
}
