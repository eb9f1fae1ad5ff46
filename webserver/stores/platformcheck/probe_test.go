package platformcheck

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// A round spreads its probes: each in its own slot of span/n, in order, so no two
// registrations' probes bunch up however many there are (no burst after a restart).
func TestScheduleSpreadsProbesOverTheRound(t *testing.T) {
	for _, n := range []int{1, 7, 10_000} {
		span := 15 * time.Minute
		slot := span / time.Duration(n)
		offsets := schedule(n, span)
		if len(offsets) != n {
			t.Fatalf("n=%d: %d offsets", n, len(offsets))
		}
		jittered := false
		for i, at := range offsets {
			lo := time.Duration(i) * slot
			if at < lo || at > lo+slot {
				t.Fatalf("n=%d: probe %d at %s, outside its slot [%s, %s]", n, i, at, lo, lo+slot)
			}
			jittered = jittered || at != lo
		}
		if !jittered {
			t.Errorf("n=%d: every probe at the start of its slot: no jitter", n)
		}
		if last := offsets[n-1]; last > span {
			t.Errorf("n=%d: the last probe at %s, after the round", n, last)
		}
	}
	if schedule(0, time.Minute) != nil {
		t.Error("no registrations, no probes")
	}
}

// A passing check is Reachable (or StaticKey); a failing one keeps platformcheck's reason;
// the endpoints' condition fails with the first failing endpoint.
func TestConditions(t *testing.T) {
	ok := Probe{OK: true, Reason: ReasonOK, Detail: "fine."}
	conds := Conditions(Result{KeySet: ok, AuthenticationEndpoint: ok, AccesstokenEndpoint: Probe{Reason: ReasonTimeout, Detail: "slow."}}, 4)
	ks, ep := conds[0], conds[1]
	if ks.Type != ltiv1.ConditionKeySetReachable || ks.Status != metav1.ConditionTrue || ks.Reason != ltiv1.ReasonReachable || ks.ObservedGeneration != 4 {
		t.Errorf("key set: %+v", ks)
	}
	if ep.Type != ltiv1.ConditionEndpointsReachable || ep.Status != metav1.ConditionFalse || ep.Reason != ReasonTimeout {
		t.Errorf("endpoints: %+v", ep)
	}
	static := Conditions(Result{KeySet: Probe{OK: true, Reason: ReasonStaticKey}, AuthenticationEndpoint: Probe{Reason: ReasonNotFound}, AccesstokenEndpoint: ok}, 1)
	if static[0].Reason != ltiv1.ReasonStaticKey || static[0].Status != metav1.ConditionTrue {
		t.Errorf("static key: %+v", static[0])
	}
	if static[1].Reason != ReasonNotFound {
		t.Errorf("endpoints: %+v", static[1])
	}
}
