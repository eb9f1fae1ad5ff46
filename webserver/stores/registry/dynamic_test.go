package registry

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

func dynamicRegistration(name string, active bool) *ltiv1.PlatformRegistration {
	reg := platformRegistration(name, "https://lms", name, time.Now())
	reg.Labels = map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration}
	reg.Spec.Active = ptr.To(active)
	return reg
}

// The pending bound of /lti/register is read from this count: it must follow adds,
// updates (activation, deactivation after activation, label removal) and deletes.
func TestAwaitingActivationCountFollowsChanges(t *testing.T) {
	r := New()
	a, b := dynamicRegistration("a", false), dynamicRegistration("b", false)
	r.Apply(a)
	r.Apply(b)
	r.Apply(dynamicRegistration("c", true))
	trusted := platformRegistration("d", "https://lms", "d", time.Now())
	trusted.Spec.Active = ptr.To(false)
	r.Apply(trusted)
	if got := r.AwaitingActivation(); got != 2 {
		t.Fatalf("AwaitingActivation = %d, want 2 (inactive trusted and active dynamic ones do not count)", got)
	}
	r.Apply(a) // an update of the same object does not count twice
	r.ApplySecret(noLog, keySecret(t, b))
	if got := r.AwaitingActivation(); got != 2 {
		t.Fatalf("after an update and a key, AwaitingActivation = %d, want 2", got)
	}

	activated := a.DeepCopy()
	activated.Spec.Active = ptr.To(true)
	r.Apply(activated)
	deactivated := activated.DeepCopy()
	deactivated.Spec.Active = ptr.To(false)
	deactivated.Status.FirstActivated = ptr.To(metav1.Now())
	r.Apply(deactivated)
	if got := r.AwaitingActivation(); got != 1 {
		t.Fatalf("after activating (then deactivating) a, AwaitingActivation = %d, want 1", got)
	}
	r.Forget(b)
	if got := r.AwaitingActivation(); got != 0 {
		t.Fatalf("after deleting b, AwaitingActivation = %d, want 0", got)
	}
}

// An inactive registration's key is not published: an attacker's never-activated
// registrations cannot grow /lti/keys, and a deactivated platform verifies nothing.
func TestJWKSLeavesOutInactiveRegistrations(t *testing.T) {
	r := New()
	active, inactive := dynamicRegistration("active", true), dynamicRegistration("inactive", false)
	inactive.Status.FirstActivated = ptr.To(metav1.Now()) // deactivated later: keeps its key, unpublished
	activeKey, inactiveKey := keySecret(t, active), keySecret(t, inactive)
	for _, o := range []any{active, inactive, activeKey, inactiveKey} {
		if reg, ok := o.(*ltiv1.PlatformRegistration); ok {
			r.Apply(reg)
		} else {
			r.ApplySecret(noLog, o)
		}
	}
	jwks := string(freshJWKS(t, r).Bytes())
	if !strings.Contains(jwks, r.Get("active").Key.KID) {
		t.Fatalf("the active registration's key is missing from %s", jwks)
	}
	if strings.Contains(jwks, r.Get("inactive").Key.KID) {
		t.Fatalf("the inactive registration's key is published: %s", jwks)
	}
	reactivated := inactive.DeepCopy()
	reactivated.Spec.Active = ptr.To(true)
	r.Apply(reactivated)
	if !strings.Contains(string(freshJWKS(t, r).Bytes()), r.Get("inactive").Key.KID) {
		t.Fatal("activating a registration publishes its key again")
	}
}
