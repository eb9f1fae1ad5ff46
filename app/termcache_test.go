package app

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// A term's controllers read the serving cache's informers (one copy of each object), and
// what the term added to them ends with it: its event handlers stop, the informers keep
// serving, and a field index two terms ask for is added once.
func TestTermsShareTheServingCache(t *testing.T) {
	const ns = "terms"
	env, err := testenv.Start(Scheme(), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := env.Context()
	// All namespaces: ltiop's one-namespace cache wraps these informers, whose handler
	// registrations say when they have stopped.
	shared, err := cache.New(env.Config, cache.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = shared.Start(ctx) }()
	if !shared.WaitForCacheSync(ctx) {
		t.Fatal("the serving cache did not sync")
	}
	served, err := shared.GetInformer(ctx, &corev1.ConfigMap{}) // what the web server reads
	if err != nil {
		t.Fatal(err)
	}
	servedSeen := make(chan string, 10)
	if _, err := served.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { forward(servedSeen, obj) },
	}); err != nil {
		t.Fatal(err)
	}

	var indexes sharedIndexes
	index := func(c cache.Cache) error {
		return c.IndexField(ctx, &corev1.ConfigMap{}, "data.owner", func(o client.Object) []string {
			return []string{o.(*corev1.ConfigMap).Data["owner"]}
		})
	}
	termCtx, endTerm := context.WithCancel(ctx)
	term, err := indexes.newCacheFunc(shared)(env.Config, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	termEnded := make(chan error, 1)
	go func() { termEnded <- term.Start(termCtx) }()
	if err := index(term); err != nil {
		t.Fatal(err)
	}
	inf, err := term.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	termSeen := make(chan string, 10)
	handler, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { forward(termSeen, obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) {
		t.Helper()
		if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string]string{"owner": "lms"}}); err != nil {
			t.Fatal(err)
		}
	}
	await := func(seen <-chan string, want string) {
		t.Helper()
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("saw %s, want %s", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s was not seen within 20 s", want)
		}
	}
	create("during-the-term")
	await(termSeen, "during-the-term")
	await(servedSeen, "during-the-term")
	var byOwner corev1.ConfigMapList // the term reads the shared store, through its index
	if err := term.List(ctx, &byOwner, client.InNamespace(ns), client.MatchingFields{"data.owner": "lms"}); err != nil || len(byOwner.Items) != 1 {
		t.Fatalf("listing by the index: %d items, %v", len(byOwner.Items), err)
	}
	// Keyed for lists in a namespace only, not also across namespaces (a set per value).
	keys := served.(interface{ GetIndexer() toolscache.Indexer }).GetIndexer().ListIndexFuncValues(fieldIndexName("data.owner"))
	if !slices.Contains(keys, "terms/lms") || slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "__all_namespaces/") }) {
		t.Fatalf("index keys %v, want terms/lms and none across namespaces", keys)
	}

	endTerm()
	if err := <-termEnded; err != nil {
		t.Fatal(err)
	}
	select { // the term's handler was removed and has stopped
	case <-handler.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
	case <-time.After(20 * time.Second):
		t.Fatal("the term's event handler still runs after the term ended")
	}
	create("after-the-term") // the serving informer still runs
	await(servedSeen, "after-the-term")
	select {
	case name := <-termSeen:
		t.Fatalf("the ended term's handler saw %s", name)
	default:
	}

	// The next term asks for the same index: added once, not an "indexer conflict".
	next, err := indexes.newCacheFunc(shared)(env.Config, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := index(next); err != nil {
		t.Fatalf("the second term's index: %v", err)
	}
	if err := next.RemoveInformer(ctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if err := next.List(ctx, &byOwner, client.InNamespace(ns), client.MatchingFields{"data.owner": "lms"}); err != nil || len(byOwner.Items) != 2 {
		t.Fatalf("a term cannot remove the web server's informer: listing gave %d items, %v", len(byOwner.Items), err)
	}
}

// forward sends the name of a ConfigMap of the test's namespace.
func forward(seen chan<- string, obj any) {
	if cm := obj.(*corev1.ConfigMap); cm.Namespace == "terms" {
		seen <- cm.Name
	}
}
