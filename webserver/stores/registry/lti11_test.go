package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// LTI11-KEY-01: a 1.1 launch finds its registration by consumer key, and the shared secret
// from the Secret cache; changes and deletions are followed.
func TestConsumerKeyAndSharedSecret(t *testing.T) {
	r := New()
	now := time.Now()
	old := platformRegistration("old", "https://lms.example.com", "1", now.Add(-time.Hour))
	old.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: "ck", SharedSecret: ltiv1.SecretKeyRef{Name: "lti11"}}
	young := platformRegistration("young", "https://lms.example.com", "2", now)
	young.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: "ck", SharedSecret: ltiv1.SecretKeyRef{Name: "other", Key: "s"}}
	r.Apply(young)
	r.Apply(old)
	if p := r.ByConsumerKey("ck"); p == nil || p.ID != "old" {
		t.Fatalf("ByConsumerKey = %v, want the oldest", p)
	}
	if p := r.ByConsumerKey("nope"); p != nil {
		t.Fatalf("an unknown key found %s", p.ID)
	}
	if _, ok := r.LTI11Secret(r.Get("old")); ok {
		t.Fatal("a secret before its Secret arrived")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lti11"}, Data: map[string][]byte{"secret": []byte("shh")}}
	r.ApplySecret(noLog, secret)
	if s, ok := r.LTI11Secret(r.Get("old")); !ok || s != "shh" {
		t.Fatalf("LTI11Secret = %q, %v", s, ok)
	}
	old.Spec.Active = ptr.To(false)
	r.Apply(old)
	if p := r.ByConsumerKey("ck"); p == nil || p.ID != "young" {
		t.Fatalf("an inactive registration still answers: %v", p)
	}
	r.Forget(young)
	if p := r.ByConsumerKey("ck"); p != nil {
		t.Fatalf("a deleted registration still answers: %v", p.ID)
	}
	r.ForgetSecret(secret)
	if _, ok := r.LTI11Secret(r.Get("old")); ok {
		t.Fatal("a deleted Secret still answers")
	}
}
