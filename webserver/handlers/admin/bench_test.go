package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// tenThousand is a registry of 10,000 registrations, each with a tool key (one key for
// all: parsing 10,000 would only slow the setup; the answer carries each one's PEM).
func tenThousand(b testing.TB) *admin.Platforms { return manyPlatforms(b, 10000) }

// manyPlatforms is tenThousand with n registrations.
func manyPlatforms(b testing.TB, n int) *admin.Platforms {
	reg := registry.New()
	pemKey := testkeys.RSAKeyPEM(b, toolKey)
	for i := range n {
		name := fmt.Sprintf("lms-%05d-scale-example-x7k2p", i)
		lms := fmt.Sprintf("https://lms-%05d.scale.example", i)
		pr := &ltiv1.PlatformRegistration{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name), Generation: 1},
			Spec: ltiv1.PlatformRegistrationSpec{URL: ltiv1.EndpointURL(lms), ClientID: fmt.Sprint(i), Name: "LMS",
				AuthenticationEndpoint: ltiv1.EndpointURL(lms + "/auth"), AccesstokenEndpoint: ltiv1.EndpointURL(lms + "/token"),
				AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms + "/jwks"}},
		}
		reg.Apply(pr)
		if i < 100 { // enough for a page to carry real PEMs; the rest have none
			reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-key", OwnerReferences: []metav1.OwnerReference{{
					Kind: "PlatformRegistration", Name: name, UID: pr.UID, Controller: ptr.To(true)}}},
				Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemKey},
			})
		}
	}
	key, err := keyring.Sealing.NewKey(time.Now(), 0)
	if err != nil {
		b.Fatal(err)
	}
	ring, err := sessions.NewKeyring([]keyring.SealingKey{key})
	if err != nil {
		b.Fatal(err)
	}
	return &admin.Platforms{Registry: reg, Cursors: ring, PublicURL: "https://lti.example.com"}
}

// BenchmarkListPage answers GET /api/platforms?limit=100 out of 10,000: the page cut,
// its JSON, and the sealed cursor of next (issue #14: under 5 ms).
func BenchmarkListPage(b *testing.B) {
	h := tenThousand(b)
	req := httptest.NewRequest("GET", "/api/platforms?limit=100", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.List(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("Link") == "" {
			b.Fatalf("%d", rec.Code)
		}
	}
}

// BenchmarkListNextPage follows a cursor: opening it costs as much as sealing one.
func BenchmarkListNextPage(b *testing.B) {
	h := tenThousand(b)
	first := httptest.NewRecorder()
	h.List(first, httptest.NewRequest("GET", "/api/platforms?limit=100", nil))
	next, err := url.Parse(first.Header().Get("Link")[1 : len(first.Header().Get("Link"))-len(`>; rel="next"`)])
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", next.RequestURI(), nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.List(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkListWhole answers the unpaged list of 10,000, streamed.
func BenchmarkListWhole(b *testing.B) {
	h := tenThousand(b)
	req := httptest.NewRequest("GET", "/api/platforms", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.List(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d", rec.Code)
		}
	}
}
