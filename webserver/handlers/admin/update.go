package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// UpdateRequest is the body of PUT /api/platforms/{id}: the PlatformRequest fields, and
// the read-only fields of the Platform object, so that what GET answered can be sent back
// with a field or two changed (the LTIAAS SDK does so). A read-only field present with
// the registration's current value is ignored; with another value it is refused, naming
// the field, since it cannot be changed this way. launchHealth is ignored whatever its
// value: it moves as launches arrive, so the GET it came from may be a launch behind.
type UpdateRequest struct {
	PlatformRequest
	ID           *string         `json:"id,omitempty"`
	PublicKey    *string         `json:"publicKey,omitempty"`
	LaunchHealth json.RawMessage `json:"launchHealth,omitempty"`
}

// checkReadOnly refuses read-only fields whose value differs from the registration's.
// publicKey is compared without surrounding whitespace (a PEM may lose its final newline
// on the way); while the key is not made yet, GET answered "" and "" is accepted.
func (req *UpdateRequest) checkReadOnly(current *registry.Platform) *httpapi.Error {
	var problems []string
	if req.ID != nil && *req.ID != current.ID {
		problems = append(problems, fmt.Sprintf("id: read-only, must be %q (the platform in the path) or absent", current.ID))
	}
	if req.PublicKey != nil {
		want := ""
		if current.Key != nil {
			want = current.PublicKeyPEM()
		}
		if strings.TrimSpace(*req.PublicKey) != strings.TrimSpace(want) {
			problems = append(problems, "publicKey: read-only, must be the registration's current public key (as GET answers it) or absent; ltiop makes and rotates the key")
		}
	}
	if len(problems) > 0 {
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, strings.Join(problems, "; ")+".")
	}
	return nil
}
