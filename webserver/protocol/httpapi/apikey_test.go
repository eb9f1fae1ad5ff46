package httpapi

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A guessable API key is never accepted: a Secret holding one leaves the integrator API
// closed (API_KEY_NOT_CONFIGURED) and readiness failing, naming the Secret, until it holds
// a long one.
func TestShortAPIKeyIsRefused(t *testing.T) {
	k := NewAPIKey("ltiop-api-key", "apiKey")
	secret := func(key string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ltiop-api-key"}, Data: map[string][]byte{"apiKey": []byte(key)}}
	}
	short := strings.Repeat("k", MinAPIKeyLength-1)
	k.update(secret(short))
	if err := k.Check(short); err == nil || err.Status != http.StatusServiceUnavailable || err.Code != CodeAPIKeyNotConfigured {
		t.Fatalf("a %d-character key: %v, want 503 %s", len(short), err, CodeAPIKeyNotConfigured)
	}
	if k.Usable() || !strings.Contains(k.Waiting(), "ltiop-api-key") {
		t.Fatalf("usable %v, waiting %q: readiness must fail, naming the Secret", k.Usable(), k.Waiting())
	}

	long := strings.Repeat("k", MinAPIKeyLength)
	k.update(secret(long))
	if err := k.Check(long); err != nil || !k.Usable() {
		t.Fatalf("a %d-character key: %v, usable %v", len(long), err, k.Usable())
	}
	if err := k.Check(short); err == nil || err.Code != CodeInvalidAPIKey {
		t.Fatalf("another key: %v, want %s", err, CodeInvalidAPIKey)
	}
}
