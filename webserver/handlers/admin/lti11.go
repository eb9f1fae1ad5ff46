package admin

import (
	"fmt"
	"net/http"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// PlatformLTI11 is a registration's LTI 1.1 credentials as the API shows and takes them:
// the consumer key and where its shared secret is (a Secret labelled
// app.kubernetes.io/managed-by=ltiop). The secret itself never passes through the API.
type PlatformLTI11 struct {
	ConsumerKey  string         `json:"consumerKey"`
	SharedSecret SecretKeyRefJS `json:"sharedSecret"`
}

// SecretKeyRefJS names a Secret and its data key ("secret" when empty).
type SecretKeyRefJS struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

func lti11ToAPI(spec *ltiv1.PlatformRegistrationSpec) *PlatformLTI11 {
	if spec.LTI11 == nil {
		return nil
	}
	return &PlatformLTI11{ConsumerKey: spec.LTI11.ConsumerKey,
		SharedSecret: SecretKeyRefJS{Name: spec.LTI11.SharedSecret.Name, Key: spec.LTI11.SharedSecret.SecretKey()}}
}

// CodeConsumerKeyInUse means another registration holds the LTI 1.1 consumer key. A 1.1 launch
// names only its consumer key, so two holders would leave the launch to pick one.
const CodeConsumerKeyInUse = "LTI11_CONSUMER_KEY_IN_USE"

// consumerKeyConflict refuses spec's consumer key when a registration other than self (an
// id, "" for a new one) holds it.
func (h *Platforms) consumerKeyConflict(spec *ltiv1.PlatformRegistrationSpec, self string) *httpapi.Error {
	if spec.LTI11 == nil {
		return nil
	}
	if other := h.Registry.ConsumerKeyHolder(spec.LTI11.ConsumerKey, self); other != nil {
		return httpapi.Errorf(http.StatusConflict, CodeConsumerKeyInUse, fmt.Sprintf(
			"Platform %s already holds this LTI 1.1 consumer key (lti11.consumerKey): each consumer key names one registration.", other.ID))
	}
	return nil
}

// lti11FromRequest sets spec.LTI11 from the request: omitted keeps the current value, an
// empty consumerKey removes the credentials.
func lti11FromRequest(req *PlatformLTI11, spec *ltiv1.PlatformRegistrationSpec, bad func(string, ...any)) {
	if req == nil {
		return
	}
	if req.ConsumerKey == "" {
		spec.LTI11 = nil
		return
	}
	switch {
	case len(req.ConsumerKey) > 255:
		bad("lti11.consumerKey: at most 255 characters")
	case req.SharedSecret.Name == "" || len(req.SharedSecret.Name) > 253:
		bad("lti11.sharedSecret.name: the name of a Secret (1 to 253 characters) is required")
	case len(req.SharedSecret.Key) > 253:
		bad("lti11.sharedSecret.key: at most 253 characters")
	}
	spec.LTI11 = &ltiv1.LTI11Credentials{ConsumerKey: req.ConsumerKey,
		SharedSecret: ltiv1.SecretKeyRef{Name: req.SharedSecret.Name, Key: req.SharedSecret.Key}}
}
