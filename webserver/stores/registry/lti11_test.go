package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

func holderIDs(ps []*Platform) []string {
	ids := []string{}
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

// LTI11-KEY-01: a 1.1 launch finds its registration by consumer key, and the shared secret
// from the Secret cache; changes and deletions are followed.
func TestConsumerKeyAndSharedSecret(t *testing.T) {
	r := New()
	reg := platformRegistration("lms", "https://lms.example.com", "1", time.Now())
	reg.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: "ck", SharedSecret: ltiv1.SecretKeyRef{Name: "lti11"}}
	r.Apply(reg)
	if got := holderIDs(r.ConsumerKeyHolders("ck")); len(got) != 1 || got[0] != "lms" {
		t.Fatalf("ConsumerKeyHolders = %v, want [lms]", got)
	}
	if got := r.ConsumerKeyHolders("nope"); len(got) != 0 {
		t.Fatalf("an unknown key found %v", holderIDs(got))
	}
	if _, ok := r.LTI11Secret(r.Get("lms")); ok {
		t.Fatal("a secret before its Secret arrived")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lti11"}, Data: map[string][]byte{"secret": []byte("shh")}}
	r.ApplySecret(noLog, secret)
	if s, ok := r.LTI11Secret(r.Get("lms")); !ok || s != "shh" {
		t.Fatalf("LTI11Secret = %q, %v", s, ok)
	}
	reg.Spec.Active = ptr.To(false)
	r.Apply(reg)
	if got := r.ConsumerKeyHolders("ck"); len(got) != 1 || got[0].Spec.IsActive() {
		t.Fatalf("an inactive registration still holds its key, as inactive: %v", holderIDs(got))
	}
	reg.Spec.LTI11.ConsumerKey = "ck2"
	r.Apply(reg)
	if got := r.ConsumerKeyHolders("ck"); len(got) != 0 {
		t.Fatalf("the old key still finds %v", holderIDs(got))
	}
	r.Forget(reg)
	if got := r.ConsumerKeyHolders("ck2"); len(got) != 0 {
		t.Fatalf("a deleted registration still answers: %v", holderIDs(got))
	}
	r.ForgetSecret(secret)
	if _, ok := r.LTI11Secret(r.Get("lms")); ok {
		t.Fatal("a deleted Secret still answers")
	}
}

// LTI11-KEY-03: two registrations with one consumer key (kubectl, or two API creates that
// both passed the check) are both returned, whatever their age or state, so that the launch
// can refuse the key instead of picking one; removing one leaves the other alone.
func TestConsumerKeyHeldTwiceIsAmbiguous(t *testing.T) {
	r := New()
	now := time.Now()
	old := platformRegistration("old", "https://lms.example.com", "1", now.Add(-time.Hour))
	old.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: "ck", SharedSecret: ltiv1.SecretKeyRef{Name: "lti11"}}
	young := platformRegistration("young", "https://other.example.com", "2", now)
	young.Spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: "ck", SharedSecret: ltiv1.SecretKeyRef{Name: "other", Key: "s"}}
	young.Spec.Active = ptr.To(false)
	r.Apply(young)
	r.Apply(old)
	if got := holderIDs(r.ConsumerKeyHolders("ck")); len(got) != 2 || got[0] != "old" || got[1] != "young" {
		t.Fatalf("ConsumerKeyHolders = %v, want both, in ID order", got)
	}
	r.Apply(young) // an update of one holder (its status) keeps one entry for it
	if got := holderIDs(r.ConsumerKeyHolders("ck")); len(got) != 2 {
		t.Fatalf("after an update, ConsumerKeyHolders = %v", got)
	}
	r.Forget(old)
	if got := holderIDs(r.ConsumerKeyHolders("ck")); len(got) != 1 || got[0] != "young" {
		t.Fatalf("after a delete, ConsumerKeyHolders = %v, want [young]", got)
	}
}
