// Package testclient stands in for the Kubernetes API server in handler tests: a fake
// client for ltiop's types, what the API server assigns on create, and a gate an
// interceptor passes writes through, so that a test can make the next write fail and count
// the writes that got through.
package testclient

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// NewFake returns controller-runtime's fake client for ltiop's types, with the status
// subresource of PlatformRegistration and the managed fields returned, as the API server
// does.
func NewFake(tb testing.TB) client.WithWatch {
	tb.Helper()
	scheme := runtime.NewScheme()
	if err := ltiv1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&ltiv1.PlatformRegistration{}).
		WithReturnManagedFields().Build()
}

// Created sets on obj, about to be created, what the API server assigns: a UID, generation
// 1 and the creation time.
func Created(obj client.Object) {
	obj.SetUID(types.UID("uid-" + rand.String(8)))
	obj.SetGeneration(1)
	obj.SetCreationTimestamp(metav1.Now())
}

// Gate is what an interceptor passes writes through. The zero value lets every write pass.
type Gate struct {
	fail   atomic.Pointer[error]
	passed atomic.Int32
}

// FailNext makes the next write fail with err, changing nothing.
func (g *Gate) FailNext(err error) { g.fail.Store(&err) }

// Pending reports whether a failure set by FailNext is still waiting for its write.
func (g *Gate) Pending() bool { return g.fail.Load() != nil }

// Pass is called by the interceptor before a write: it returns the failure set by FailNext,
// once, or counts the write and returns nil.
func (g *Gate) Pass() error {
	if err := g.fail.Swap(nil); err != nil {
		return *err
	}
	g.passed.Add(1)
	return nil
}

// Passed is the number of writes that got through.
func (g *Gate) Passed() int32 { return g.passed.Load() }

// Stored returns the registrations c holds in namespace.
func Stored(tb testing.TB, c client.Reader, namespace string) []ltiv1.PlatformRegistration {
	tb.Helper()
	var list ltiv1.PlatformRegistrationList
	if err := c.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		tb.Fatal(err)
	}
	return list.Items
}
