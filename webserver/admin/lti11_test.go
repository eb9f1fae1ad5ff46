package admin_test

import (
	"net/http"
	"testing"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// The platforms API takes and shows the LTI 1.1 consumer key and the Secret reference (never
// a secret); PUT without lti11 keeps it, an empty consumerKey removes it.
func TestLTI11Credentials(t *testing.T) {
	h := newHarness(t)
	lti11 := map[string]any{"consumerKey": "ck-1", "sharedSecret": map[string]any{"name": "canvas-lti11"}}
	p := h.create(with(canvasBody("c"), "lti11", lti11))
	id := p["id"].(string)
	shown, _ := p["lti11"].(map[string]any)
	if shown["consumerKey"] != "ck-1" || shown["sharedSecret"].(map[string]any)["key"] != ltiv1.LTI11SecretKey {
		t.Fatalf("lti11 shown as %v", p["lti11"])
	}
	stored := h.get(id)
	if stored.Spec.LTI11 == nil || stored.Spec.LTI11.ConsumerKey != "ck-1" || stored.Spec.LTI11.SharedSecret.Name != "canvas-lti11" {
		t.Fatalf("stored %+v", stored.Spec.LTI11)
	}
	if res := h.call("PUT", "/api/platforms/"+id, canvasBody("c")); res.Status != http.StatusOK || h.get(id).Spec.LTI11 == nil {
		t.Fatalf("a PUT without lti11 dropped it: %d %s", res.Status, res.Body)
	}
	bad := h.call("PUT", "/api/platforms/"+id, with(canvasBody("c"), "lti11", map[string]any{"consumerKey": "ck-2"}))
	testWantError(t, bad, http.StatusBadRequest)
	if h.get(id).Spec.LTI11.ConsumerKey != "ck-1" {
		t.Fatal("a refused PUT changed the consumer key")
	}
	if res := h.call("PUT", "/api/platforms/"+id, with(canvasBody("c"), "lti11", map[string]any{"consumerKey": ""})); res.Status != http.StatusOK {
		t.Fatalf("remove: %d %s", res.Status, res.Body)
	}
	if got := h.get(id).Spec.LTI11; got != nil {
		t.Fatalf("lti11 not removed: %+v", got)
	}
}

func testWantError(t *testing.T, res interface {
	JSON(testing.TB) map[string]any
}, status int) {
	t.Helper()
	m := res.JSON(t)
	if m["status"] != float64(status) || m["details"].(map[string]any)["message"] != "INVALID_PARAMETERS" {
		t.Fatalf("got %v, want %d INVALID_PARAMETERS", m, status)
	}
}
