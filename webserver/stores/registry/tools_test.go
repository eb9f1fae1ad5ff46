package registry

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

func toolReg(tb testing.TB, keyIndex int, generation int64) *ltiv1.ToolRegistration {
	key, _ := json.Marshal(jwkMap(tb, &testkeys.RSAKey(tb, keyIndex).PublicKey, map[string]string{"kid": "tool-kid"}))
	return &ltiv1.ToolRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "quiz", Namespace: "lti", UID: "u", Generation: generation},
		Spec: ltiv1.ToolRegistrationSpec{Name: "Quiz", LoginURL: "https://tool.example/login",
			RedirectionURIs: []ltiv1.EndpointURL{"https://tool.example/launch"}, TargetLinkURI: "https://tool.example/launch",
			AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: string(key)},
			Scopes:     []ltiv1.Scope{ltiv1.ScopeNRPSMembership}},
	}
}

// A status change keeps the key parsed from the spec; a new key is parsed.
func TestToolsApplyParsesAKeyOnce(t *testing.T) {
	ts := NewTools()
	ts.Apply(toolReg(t, 0, 1))
	first := ts.Get("quiz").static.key

	status := toolReg(t, 0, 1)
	status.Status.LaunchHealth = &ltiv1.LaunchHealth{LastLaunchTime: &metav1.Time{Time: time.Unix(1, 0)}}
	ts.Apply(status)
	if ts.Get("quiz").static.key != first {
		t.Fatal("a status change parsed the key again")
	}

	changed := toolReg(t, 1, 2)
	changed.Spec.Scopes = append(changed.Spec.Scopes, ltiv1.ScopeAGSScore)
	ts.Apply(changed)
	got := ts.Get("quiz")
	if got.static.key == first || !got.static.key.Equal(&testkeys.RSAKey(t, 1).PublicKey) || len(got.Scopes()) != 2 {
		t.Fatalf("a spec change kept the old key or scopes: %v", got.Scopes())
	}

	recreated := toolReg(t, 0, 2)
	recreated.UID = "u2"
	ts.Apply(recreated)
	if !ts.Get("quiz").static.key.Equal(&testkeys.RSAKey(t, 0).PublicKey) {
		t.Fatal("a re-created registration kept the old one's key")
	}
}

// Ready and Judged follow the controller's verdict on the current generation only: a
// verdict on an earlier one is no verdict (the API waits for one before answering a write).
func TestToolsReadyIsTheVerdictOnThisGeneration(t *testing.T) {
	ts := NewTools()
	for _, c := range []struct {
		name          string
		observed      int64
		status        metav1.ConditionStatus
		ready, judged bool
	}{
		{"no condition yet", 0, "", false, false},
		{"ready, for an earlier spec", 1, metav1.ConditionTrue, false, false},
		{"ready", 2, metav1.ConditionTrue, true, true},
		{"refused", 2, metav1.ConditionFalse, false, true},
	} {
		reg := toolReg(t, 0, 2)
		if c.status != "" {
			reg.Status.Conditions = []metav1.Condition{{Type: ltiv1.ConditionReady, Status: c.status, ObservedGeneration: c.observed}}
		}
		ts.Apply(reg)
		if got := ts.Get("quiz"); got.Ready != c.ready || got.Judged != c.judged {
			t.Errorf("%s: ready %v, judged %v; want %v, %v", c.name, got.Ready, got.Judged, c.ready, c.judged)
		}
	}
}

// A ToolRegistration whose status changed (launch health, once a minute per replica that
// served it): what every replica's informer then applies.
// go test -run x -bench ToolsApply ./webserver/stores/registry/
func BenchmarkToolsApplyStatusChange(b *testing.B) {
	reg := toolReg(b, 0, 1)
	ts := NewTools()
	ts.Apply(reg)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		next := reg.DeepCopy()
		next.Status.LaunchHealth = &ltiv1.LaunchHealth{LastLaunchTime: &metav1.Time{Time: time.Unix(int64(i), 0)}}
		ts.Apply(next)
	}
	if ts.Get("quiz").static.key == nil {
		b.Fatal("the key was lost")
	}
}
