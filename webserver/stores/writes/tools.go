package writes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// ErrEncoding means a write's body could not be encoded: nothing was sent.
var ErrEncoding = errors.New("the write could not be encoded")

// CreateTool creates a ToolRegistration of spec with labels as ManagerAPI, named name or,
// when name is empty, with a name the API server generates (tool-…).
func CreateTool(ctx context.Context, c client.Client, namespace, name string, spec *ltiv1.ToolRegistrationSpec, labels map[string]string) (*ltiv1.ToolRegistration, error) {
	reg := &ltiv1.ToolRegistration{Spec: *spec}
	reg.Namespace, reg.Name, reg.Labels = namespace, name, labels
	if name == "" {
		reg.GenerateName = "tool-"
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return reg, c.Create(ctx, reg, client.FieldOwner(ManagerAPI))
}

// ReplaceToolSpec replaces the whole spec of the ToolRegistration obj names (namespace,
// name and UID) by a JSON patch that tests the UID first, as ManagerAPI. obj is then what
// the API server answered.
func ReplaceToolSpec(ctx context.Context, c client.Client, obj *ltiv1.ToolRegistration, spec *ltiv1.ToolRegistrationSpec) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": string(obj.UID)},
		{"op": "replace", "path": "/spec", "value": spec},
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncoding, err)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(ManagerAPI))
}
