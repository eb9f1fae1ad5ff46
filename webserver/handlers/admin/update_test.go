package admin_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
)

// PUT takes back what GET answered: id and publicKey unchanged are ignored, and the
// fields that can change do.
func TestUpdateWithTheBodyOfGet(t *testing.T) {
	h := newHarness(t)
	id := h.create(canvasBody("g"))["id"].(string)
	got := h.call("GET", "/api/platforms/"+id, nil)
	if got.Status != http.StatusOK {
		t.Fatalf("get: %d %s", got.Status, got.Body)
	}
	body := got.JSON(t)
	if body["publicKey"] == "" || body["id"] != id {
		t.Fatalf("GET body %v", body)
	}
	body["name"] = "Canvas (edited)"
	res := h.call("PUT", "/api/platforms/"+id, body)
	if res.Status != http.StatusOK {
		t.Fatalf("put of the GET body: %d %s", res.Status, res.Body)
	}
	after := res.JSON(t)
	if after["name"] != "Canvas (edited)" || after["publicKey"] != body["publicKey"] || after["id"] != id {
		t.Fatalf("answer %v", after)
	}
	// launchHealth is ignored whatever its value: a launch may have moved it since the GET.
	body["launchHealth"] = map[string]any{"lastLaunchTime": "2026-11-29T09:00:00Z"}
	if res := h.call("PUT", "/api/platforms/"+id, body); res.Status != http.StatusOK {
		t.Fatalf("put with a launchHealth: %d %s", res.Status, res.Body)
	}
	// A PEM that lost its final newline on the way is the same key.
	body["publicKey"] = strings.TrimSpace(body["publicKey"].(string))
	if res := h.call("PUT", "/api/platforms/"+id, body); res.Status != http.StatusOK {
		t.Fatalf("put with a trimmed publicKey: %d %s", res.Status, res.Body)
	}
	if h.get(id).Spec.Name != "Canvas (edited)" {
		t.Fatalf("stored %+v", h.get(id).Spec)
	}
}

// A read-only field with another value is refused naming it, and nothing is written.
func TestUpdateRefusesChangedReadOnlyFields(t *testing.T) {
	h := newHarness(t)
	id := h.create(canvasBody("r"))["id"].(string)
	other := h.create(canvasBody("other"))["id"].(string)
	body := h.call("GET", "/api/platforms/"+id, nil).JSON(t)
	body["name"] = "must not be applied"
	before := h.get(id).Spec
	writes := h.writes.Passed()
	for _, tc := range []struct {
		name  string
		body  map[string]any
		names []string
	}{
		{"another id", with(body, "id", other), []string{"id: read-only"}},
		{"an empty id", with(body, "id", ""), []string{"id: read-only"}},
		{"another publicKey", with(body, "publicKey", rsaPublicPEM(t)), []string{"publicKey: read-only"}},
		{"an empty publicKey", with(body, "publicKey", ""), []string{"publicKey: read-only"}},
		{"both", with(body, "id", "x", "publicKey", "y"), []string{"id: read-only", "publicKey: read-only"}},
		{"id of the wrong type", with(body, "id", 7), []string{"id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc := testhttp.WantError(t, h.call("PUT", "/api/platforms/"+id, tc.body), http.StatusBadRequest, "INVALID_PARAMETERS")
			for _, n := range tc.names {
				if !strings.Contains(desc, n) {
					t.Fatalf("description %q does not name %q", desc, n)
				}
			}
		})
	}
	if n := h.writes.Passed(); n != writes || !reflect.DeepEqual(h.get(id).Spec, before) {
		t.Fatalf("refused updates changed something (%d writes): %+v", n-writes, h.get(id).Spec)
	}
	// POST still refuses the read-only fields: a new registration's id and key are ltiop's.
	testhttp.WantError(t, h.call("POST", "/api/platforms", with(canvasBody("new"), "id", "chosen")), http.StatusBadRequest, "INVALID_PARAMETERS")
}

// Every field of the Platform object GET answers is one PUT accepts, writable or
// read-only: a field added to Platform alone would make the body of GET a 400 again.
func TestUpdateRequestCoversThePlatformObject(t *testing.T) {
	accepted := jsonFields(reflect.TypeFor[admin.UpdateRequest]())
	for name := range jsonFields(reflect.TypeFor[admin.Platform]()) {
		if !accepted[name] {
			t.Errorf("Platform.%s is not accepted by PUT (add it to PlatformRequest, or to UpdateRequest as read-only)", name)
		}
	}
}

// jsonFields are the JSON member names of struct type t, embedded structs included.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			for n := range jsonFields(f.Type) {
				out[n] = true
			}
		case name == "":
			out[f.Name] = true
		default:
			out[name] = true
		}
	}
	return out
}
