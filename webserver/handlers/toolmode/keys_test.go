package toolmode_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

func kidsOf(t *testing.T, body string) []string {
	t.Helper()
	set, err := jwk.Parse([]byte(body))
	if err != nil {
		t.Fatalf("key set %s: %v", body, err)
	}
	var out []string
	for i := range set.Len() {
		k, _ := set.Key(i)
		if alg, _ := k.Algorithm(); alg.String() != "RS256" {
			t.Fatalf("alg %v", alg)
		}
		kid, _ := k.KeyID()
		out = append(out, kid)
	}
	if strings.Contains(body, `"d"`) {
		t.Fatal("private material in the key set")
	}
	return out
}

// addKeyedRegistration adds a registration with a key of its own (the rig's others share
// the rig's key).
func (rg *rig) addKeyedRegistration(t *testing.T, name string) string {
	t.Helper()
	private, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := keys.EncodePrivateKey(private)
	pr := rg.pr.DeepCopy()
	pr.Name, pr.UID, pr.Spec.ClientID = name, types.UID("uid-"+name), "client-"+name
	rg.reg.Apply(pr)
	rg.reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: name, UID: pr.UID, Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes},
	})
	kid, _ := keys.KID(&private.PublicKey)
	return kid
}

// awaitKeys polls /lti/keys until it is rebuilt after the changes made so far.
func (rg *rig) awaitKeys(t *testing.T) testhttp.Reply {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := rg.call(t, nil, "GET", paths.Keys, nil, nil)
		if res.Header.Get("Cache-Control") != "no-cache" {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatal("/lti/keys was not rebuilt within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// T-JWKS-04: /lti/keys, kept for existing installs, publishes the public key of every
// registration, and no longer the key of one that is gone.
func TestKeys(t *testing.T) {
	rg := newRig(t)
	other := rg.addKeyedRegistration(t, "other")
	res := rg.awaitKeys(t)
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/jwk-set+json" ||
		res.Header.Get("Cache-Control") != "public, max-age=300" || res.Header.Get("ETag") == "" {
		t.Fatalf("keys: %d %v", res.Status, res.Header)
	}
	got := kidsOf(t, res.Body)
	if len(got) != 2 || !strings.Contains(strings.Join(got, " "), other) ||
		!strings.Contains(strings.Join(got, " "), rg.reg.Get("bench").Key.KID) {
		t.Fatalf("/lti/keys holds %v", got)
	}
	rg.reg.Forget(rg.pr.DeepCopy())
	if res := rg.awaitKeys(t); len(kidsOf(t, res.Body)) != 1 {
		t.Fatalf("after the registration is gone: %s", res.Body)
	}
}

// T-JWKS-04: status.jwksUrl, /lti/keys/{id}, holds the registration's key and no other
// tenant's, revalidates with its ETag, and is gzipped for clients that accept it.
func TestKeySet(t *testing.T) {
	rg := newRig(t)
	other := rg.addKeyedRegistration(t, "other")
	res := rg.call(t, nil, "GET", paths.KeySet("bench"), nil, nil)
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/jwk-set+json" ||
		res.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("key set: %d %v", res.Status, res.Header)
	}
	if got := kidsOf(t, res.Body); len(got) != 1 || got[0] != rg.reg.Get("bench").Key.KID || got[0] == other {
		t.Fatalf("bench's key set holds %v", got)
	}
	if len(res.Body) >= 2048 {
		t.Fatalf("one registration's key set is %d bytes, want < 2 KB", len(res.Body))
	}

	etag := res.Header.Get("ETag")
	again := rg.call(t, nil, "GET", paths.KeySet("bench"), map[string]string{"If-None-Match": etag}, nil)
	if again.Status != http.StatusNotModified || again.Body != "" {
		t.Fatalf("If-None-Match %s: %d %q", etag, again.Status, again.Body)
	}
	if rg.call(t, nil, "GET", paths.KeySet("other"), map[string]string{"If-None-Match": etag}, nil).Status != http.StatusOK {
		t.Fatal("another registration's ETag must not match")
	}

	// Setting Accept-Encoding turns off the client's transparent decompression.
	gz := rg.call(t, nil, "GET", paths.KeySet("bench"), map[string]string{"Accept-Encoding": "gzip"}, nil)
	if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %v", gz.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(gz.Body)))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); string(plain) != res.Body {
		t.Fatalf("gunzipped %s, want %s", plain, res.Body)
	}
}

// Unknown ids are refused in the error envelope; a registration whose key is not made yet
// answers 503, which an LMS takes as passing (T-JWKS-03), not as a set without keys.
func TestKeySetRefusals(t *testing.T) {
	rg := newRig(t)
	res := rg.call(t, nil, "GET", paths.KeySet("nobody"), nil, nil)
	testhttp.WantRefusal(t, res, http.StatusNotFound, httpapi.CodeKeySetNotFound)

	pr := rg.pr.DeepCopy()
	pr.Name, pr.UID, pr.Spec.ClientID = "keyless", "uid-keyless", "keyless"
	rg.reg.Apply(pr)
	res = rg.call(t, nil, "GET", paths.KeySet("keyless"), nil, nil)
	testhttp.WantRefusal(t, res, http.StatusServiceUnavailable, httpapi.CodeNotReady)
	if res.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
