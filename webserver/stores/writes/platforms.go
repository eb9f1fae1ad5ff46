package writes

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// CreateRegistration creates a registration under the given field manager, with the given
// labels (nil for none), named name, or when name is empty with a name the API server
// generates from the issuer's host.
func CreateRegistration(ctx context.Context, c client.Client, namespace, name string, spec *ltiv1.PlatformRegistrationSpec, manager string, labels map[string]string) (*ltiv1.PlatformRegistration, error) {
	reg := &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec:       *spec,
	}
	if name == "" {
		reg.GenerateName = namePrefix(string(spec.URL))
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return reg, c.Create(ctx, reg, client.FieldOwner(manager))
}

// ApplySpec replaces the spec fields the API manages by server-side apply under manager
// (forcing ownership: the caller is the authority for them), with a UID precondition. It
// returns the new generation.
func ApplySpec(ctx context.Context, c client.Client, current *registry.Platform, spec *ltiv1.PlatformRegistrationSpec, manager string) (int64, error) {
	obj := applyConfiguration(current, spec)
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return 0, err
	}
	return obj.GetGeneration(), nil
}

// applyConfiguration is the server-side apply body: identity, a UID precondition, and
// every spec field the API manages.
func applyConfiguration(current *registry.Platform, spec *ltiv1.PlatformRegistrationSpec) *unstructured.Unstructured {
	specMap := map[string]any{
		"url":                    string(spec.URL),
		"clientId":               spec.ClientID,
		"name":                   spec.Name,
		"authenticationEndpoint": string(spec.AuthenticationEndpoint),
		"accesstokenEndpoint":    string(spec.AccesstokenEndpoint),
		"authConfig":             map[string]any{"method": string(spec.AuthConfig.Method), "key": spec.AuthConfig.Key},
		"active":                 spec.IsActive(),
	}
	if spec.AuthorizationServer != "" {
		specMap["authorizationServer"] = spec.AuthorizationServer
	}
	if len(spec.DeploymentIDs) > 0 {
		ids := make([]any, len(spec.DeploymentIDs))
		for i, d := range spec.DeploymentIDs {
			ids[i] = d
		}
		specMap["deploymentIds"] = ids
	}
	lti11Apply(spec, specMap)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ltiv1.GroupVersion.String(),
		"kind":       "PlatformRegistration",
		"metadata":   map[string]any{"name": current.ID, "namespace": current.Namespace, "uid": string(current.UID)},
		"spec":       specMap,
	}}
	return obj
}

func lti11Apply(spec *ltiv1.PlatformRegistrationSpec, specMap map[string]any) {
	if spec.LTI11 == nil {
		return
	}
	specMap["lti11"] = map[string]any{"consumerKey": spec.LTI11.ConsumerKey,
		"sharedSecret": map[string]any{"name": spec.LTI11.SharedSecret.Name, "key": spec.LTI11.SharedSecret.SecretKey()}}
}

// RemoveLTI11 clears spec.lti11 when a PUT asked for it (an empty consumerKey): a
// server-side apply that omits the field removes it only where the API's manager applied
// it, not where kubectl or a create set it. A merge patch with the registration's UID as
// precondition clears it whoever set it.
func RemoveLTI11(ctx context.Context, c client.Client, current *registry.Platform) error {
	reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: current.Namespace, Name: current.ID}}
	patch := []byte(`{"metadata":{"uid":"` + string(current.UID) + `"},"spec":{"lti11":null}}`)
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return c.Patch(ctx, reg, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(ManagerAPI))
}

// SetKeySetAlias records on current, as ManagerRegistration, the key-set name its platform
// was given (the annotation ltiv1.AnnotationKeySetAlias), with current's UID as precondition.
func SetKeySetAlias(ctx context.Context, c client.Client, current *registry.Platform, keySetID string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": string(current.UID), "annotations": map[string]string{ltiv1.AnnotationKeySetAlias: keySetID}}})
	reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: current.Namespace, Name: current.ID}}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return c.Patch(ctx, reg, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(ManagerRegistration))
}

// RecordDeployments sets status.deploymentIds of the registration namespace/name (with uid
// as precondition, unless empty) to seen by server-side apply as ManagerLaunch.
func RecordDeployments(ctx context.Context, c client.StatusClient, namespace, name, uid string, seen []string) error {
	list := make([]any, len(seen))
	for i, d := range seen {
		list[i] = d
	}
	meta := map[string]any{"name": name, "namespace": namespace}
	if uid != "" {
		meta["uid"] = uid
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ltiv1.GroupVersion.String(), "kind": "PlatformRegistration",
		"metadata": meta, "status": map[string]any{"deploymentIds": list},
	}}
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(ManagerLaunch), client.ForceOwnership)
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// NewRegistrationName picks the name of a registration not created yet, for when it must be
// known first (dynamic registration sends its key-set URL before the platform answers):
// the issuer's host, as the API server would generate it, and ten random characters, so
// a collision is as unlikely as a guess.
func NewRegistrationName(issuer string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // the API server's generateName alphabet
	suffix := make([]byte, 10)
	for i := range suffix {
		suffix[i] = alphabet[rand.IntN(len(alphabet))] //nolint:gosec // G404: a name suffix that must not collide, not a secret
	}
	return namePrefix(issuer) + string(suffix)
}

// namePrefix makes a readable, DNS-safe generateName from the issuer's host:
// https://canvas.instructure.com -> "canvas-instructure-com-".
func namePrefix(issuer string) string {
	host := ""
	if u, err := url.Parse(issuer); err == nil {
		host = u.Hostname()
	}
	prefix := strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(host), "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	if prefix == "" || prefix[0] < 'a' {
		prefix = "platform-" + prefix
	}
	return strings.TrimRight(prefix, "-") + "-"
}
