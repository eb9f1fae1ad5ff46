// Package writes is the web server's write side: every create, update, patch and delete it
// sends the API server, of PlatformRegistrations, ToolRegistrations and their status, is
// made here (test/architecture's TestAPIServerWritesInOnePlace checks it). The handlers
// decide what to write; this package says how, under which field manager, and with which
// precondition, so that the web server never fights the controller or itself.
package writes

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field managers of the web server's writes. Each owns its own fields, and managedFields
// show an operator who wrote what (docs/platform-registrations.md, dynamic-registration.md,
// platform-mode.md name them).
const (
	// ManagerAPI writes what the management API (/api/platforms, /api/tools) is asked to.
	ManagerAPI = "ltiop-api"
	// ManagerRegistration writes the registrations dynamic registration makes or updates.
	ManagerRegistration = "ltiop-registration"
	// ManagerLaunch owns status.deploymentIds, the deployments learnt from launches.
	ManagerLaunch = "ltiop-launch"
	// ManagerLaunchHealth owns status.launchHealth (webserver/stores/launchhealth).
	ManagerLaunchHealth = "ltiop-launch-health"
	// ManagerReachability owns the reachability conditions (webserver/stores/platformcheck).
	ManagerReachability = "ltiop-reachability-probe"
)

// CallTimeout bounds each call to the API server made for a request.
const CallTimeout = 10 * time.Second

// Delete deletes the registration obj names (namespace, name and UID: a registration
// deleted and created again under the same name is not deleted by mistake).
func Delete(ctx context.Context, c client.Client, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	uid := obj.GetUID()
	return c.Delete(ctx, obj, client.Preconditions{UID: &uid})
}

// SetActive sets spec.active of the registration obj names (a PlatformRegistration or a
// ToolRegistration with namespace, name and UID) by a merge patch whose UID is the
// precondition, as ManagerAPI. obj is then what the API server answered.
func SetActive(ctx context.Context, c client.Client, obj client.Object, active bool) error {
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q},"spec":{"active":%t}}`, obj.GetUID(), active)
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(ManagerAPI))
}

// MergePatchStatus applies the merge patch body to obj's status subresource as manager.
// The caller puts its precondition (a UID or resourceVersion) in body's metadata.
func MergePatchStatus(ctx context.Context, c client.StatusClient, obj client.Object, body []byte, manager string) error {
	return c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(manager))
}

// PatchStatusFrom writes next's status as a merge patch from cur, as manager, with cur's
// resourceVersion as the precondition: conditions are one list that a merge patch replaces
// whole, so a write made in between (another writer's condition) is never undone; the
// caller reads again on a Conflict.
func PatchStatusFrom(ctx context.Context, c client.StatusClient, cur, next client.Object, manager string) error {
	return c.Status().Patch(ctx, next, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{}), client.FieldOwner(manager))
}
