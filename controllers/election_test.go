package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// The election is tested on a fake client with the production index functions; the
// envtest suites cover the watches that re-run it.

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func tool(name, clientID string, created time.Duration) *ltiv1.ToolRegistration {
	return &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(epoch.Add(created)),
	}, Spec: ltiv1.ToolRegistrationSpec{ClientID: clientID}}
}

func platform(name, url, clientID string, created time.Duration) *ltiv1.PlatformRegistration {
	return &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(epoch.Add(created)),
	}, Spec: ltiv1.PlatformRegistrationSpec{URL: ltiv1.EndpointURL(url), ClientID: clientID}}
}

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := ltiv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).
		WithIndex(&ltiv1.PlatformRegistration{}, IndexIssuerClient, platformElection.indexValue).
		WithIndex(&ltiv1.ToolRegistration{}, IndexToolClientID, toolElection.indexValue).
		WithObjects(objs...).Build()
}

func TestElectionKeepsTheOldest(t *testing.T) {
	deleting := tool("deleting", "c", -2*time.Hour)
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: epoch}, []string{"test/hold"}
	other := tool("elsewhere", "c", -3*time.Hour)
	other.Namespace = "other"
	c := fakeClient(t,
		tool("a-old", "c", -time.Hour), tool("b-same-time", "c", 0), tool("c-same-time", "c", 0),
		tool("new", "c", time.Hour), tool("other-client", "d", -time.Hour), deleting, other,
		tool("alone", "e", 0))

	for _, tc := range []struct{ name, want string }{
		{"a-old", ""}, // the deleting one is older but on its way out
		{"b-same-time", "ToolRegistration a-old already has client id c; this newer one is not used."},
		{"new", "ToolRegistration a-old already has client id c; this newer one is not used."},
		{"alone", ""},
		{"other-client", ""},
	} {
		reg := &ltiv1.ToolRegistration{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: tc.name}, reg); err != nil {
			t.Fatal(err)
		}
		p, err := toolElection.check(context.Background(), c, reg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		switch {
		case tc.want == "" && p != nil:
			t.Errorf("%s: got %+v, want no problem", tc.name, *p)
		case tc.want != "" && (p == nil || p.reason != ltiv1.ReasonDuplicateRegistration || p.message != tc.want):
			t.Errorf("%s: got %+v, want DuplicateRegistration %q", tc.name, p, tc.want)
		}
	}
}

func TestElectionOrdersByCreationThenName(t *testing.T) {
	c := fakeClient(t, tool("b", "c", 0), tool("a", "c", 0), tool("z-first", "f", -time.Hour), tool("a-later", "f", 0))
	for name, wantProblem := range map[string]bool{"a": false, "b": true, "z-first": false, "a-later": true} {
		reg := &ltiv1.ToolRegistration{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, reg); err != nil {
			t.Fatal(err)
		}
		if p, err := toolElection.check(context.Background(), c, reg); err != nil || (p != nil) != wantProblem {
			t.Errorf("%s: got %v, %v; want a problem: %v", name, p, err, wantProblem)
		}
	}
}

func TestElectionIdentityIsIssuerAndClient(t *testing.T) {
	c := fakeClient(t,
		platform("first", "https://lms.example", "c", 0),
		platform("second", "https://lms.example", "c", time.Hour),
		platform("other-client", "https://lms.example", "d", time.Hour),
		platform("other-issuer", "https://other.example", "c", time.Hour))
	for name, want := range map[string]string{
		"first":        "",
		"second":       "PlatformRegistration first already registers url https://lms.example with clientId c; this newer one is not used.",
		"other-client": "",
		"other-issuer": "",
	} {
		reg := &ltiv1.PlatformRegistration{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, reg); err != nil {
			t.Fatal(err)
		}
		p, err := platformElection.check(context.Background(), c, reg)
		if err != nil {
			t.Fatal(err)
		}
		if got := ""; p != nil {
			got = p.message
			if got != want {
				t.Errorf("%s: got %q, want %q", name, got, want)
			}
		} else if want != "" {
			t.Errorf("%s: got no problem, want %q", name, want)
		}
	}
}

func TestElectionEnqueuesThePeersOnly(t *testing.T) {
	c := fakeClient(t, tool("older", "c", -time.Hour), tool("me", "c", 0), tool("newer", "c", time.Hour),
		tool("unrelated", "d", 0))
	// The mapped object may be one the cache no longer holds (a deletion).
	gone := tool("gone", "c", -2*time.Hour)
	var got []string
	for _, req := range toolElection.enqueuePeers(c)(context.Background(), gone) {
		got = append(got, req.Name)
	}
	slices.Sort(got)
	if want := []string{"me", "newer", "older"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	me := tool("me", "c", 0)
	got = nil
	for _, req := range toolElection.enqueuePeers(c)(context.Background(), me) {
		got = append(got, req.Name)
	}
	slices.Sort(got)
	if want := []string{"newer", "older"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (a registration is not its own peer)", got, want)
	}
}

func TestElectionIndexesTheEffectiveClientID(t *testing.T) {
	generated := tool("generated", "", 0)
	if got := toolElection.indexValue(generated); !slices.Equal(got, []string{"uid-generated"}) {
		t.Errorf("got %v, want the UID", got)
	}
}
