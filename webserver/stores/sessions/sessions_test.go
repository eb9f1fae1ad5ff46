package sessions

import (
	"net/http/httptest"
	"testing"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// TestErrSealingNotReady pins the wire answer of every handler that cannot seal.
func TestErrSealingNotReady(t *testing.T) {
	w := httptest.NewRecorder()
	httpapi.WriteError(w, ErrSealingNotReady)
	want := `{"status":503,"error":"Service Unavailable","details":{"message":"NOT_READY","description":"Sealing keys are not available yet; try again."}}`
	if w.Code != 503 || w.Body.String() != want {
		t.Errorf("%d %s\nwant 503 %s", w.Code, w.Body, want)
	}
}
