package admin_test

import (
	"net/http"
	"testing"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/test/utils/testhttp"
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

// The gap of issue #28 item 7: two registrations holding one LTI 1.1 consumer key, of which
// launches silently used the oldest. The API refuses the second (create or update) with a
// clear conflict and writes nothing; a registration may keep its own key.
func TestLTI11DuplicateConsumerKeyIsRefused(t *testing.T) {
	h := newHarness(t)
	lti11 := func(key string) map[string]any {
		return map[string]any{"consumerKey": key, "sharedSecret": map[string]any{"name": "lti11-" + key}}
	}
	first := h.create(with(canvasBody("c1"), "lti11", lti11("shared-ck")))["id"].(string)

	res := h.call("POST", "/api/platforms", with(canvasBody("c2"), "lti11", lti11("shared-ck")))
	testhttp.WantRefusal(t, res, http.StatusConflict, "LTI11_CONSUMER_KEY_IN_USE")
	if n := len(h.stored()); n != 1 {
		t.Fatalf("a refused create wrote a registration: %d stored", n)
	}

	second := h.create(with(canvasBody("c2"), "lti11", lti11("own-ck")))["id"].(string)
	res = h.call("PUT", "/api/platforms/"+second, with(canvasBody("c2"), "lti11", lti11("shared-ck")))
	testhttp.WantRefusal(t, res, http.StatusConflict, "LTI11_CONSUMER_KEY_IN_USE")
	if got := h.get(second).Spec.LTI11.ConsumerKey; got != "own-ck" {
		t.Fatalf("a refused update changed the consumer key to %q", got)
	}
	if res := h.call("PUT", "/api/platforms/"+first, with(canvasBody("c1"), "lti11", lti11("shared-ck"))); res.Status != http.StatusOK {
		t.Fatalf("a registration keeping its own key: %d %s", res.Status, res.Body)
	}
}
