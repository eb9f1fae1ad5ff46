package admin

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
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

func lti11Apply(spec *ltiv1.PlatformRegistrationSpec, specMap map[string]any) {
	if spec.LTI11 == nil {
		return
	}
	specMap["lti11"] = map[string]any{"consumerKey": spec.LTI11.ConsumerKey,
		"sharedSecret": map[string]any{"name": spec.LTI11.SharedSecret.Name, "key": spec.LTI11.SharedSecret.SecretKey()}}
}

// removeLTI11 clears spec.lti11 when a PUT asked for it (an empty consumerKey): a
// server-side apply that omits the field removes it only where the API's manager applied
// it, not where kubectl or a create set it. A merge patch with the registration's UID as
// precondition clears it whoever set it.
func removeLTI11(ctx context.Context, c client.Client, current *registry.Platform) error {
	reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: current.Namespace, Name: current.ID}}
	patch := []byte(`{"metadata":{"uid":"` + string(current.UID) + `"},"spec":{"lti11":null}}`)
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout)
	defer cancel()
	return c.Patch(ctx, reg, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
}
