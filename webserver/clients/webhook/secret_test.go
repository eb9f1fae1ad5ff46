package webhook

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func secretObject(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// The key follows the Secret: set, replaced, refused when invalid (nothing signed with a
// weak key), and gone with its data key; other Secrets are ignored.
func TestSecretFollowsTheSecret(t *testing.T) {
	s := NewSecret("ltiop-api-key", "webhookSecret")
	if s.Key() != nil {
		t.Fatal("a key before any Secret")
	}
	s.update(secretObject("ltiop-api-key", map[string]string{"webhookSecret": testSecret}))
	first := s.Key()
	if len(first) < MinSecretBytes {
		t.Fatalf("key = %x", first)
	}
	s.update(secretObject("another", map[string]string{"webhookSecret": "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"}))
	if string(s.Key()) != string(first) {
		t.Error("another Secret changed the key")
	}
	s.update(secretObject("ltiop-api-key", map[string]string{"webhookSecret": "whsec_c2hvcnQ="}))
	if s.Key() != nil {
		t.Error("a secret of 5 bytes is used")
	}
	s.update(secretObject("ltiop-api-key", map[string]string{"webhookSecret": testSecret}))
	s.update(secretObject("ltiop-api-key", map[string]string{"apiKey": "x"}))
	if s.Key() != nil {
		t.Error("the key outlived its data key")
	}
}
