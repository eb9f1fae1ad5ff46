// Package heap measures what one ltiop holds in memory per platform registration (issue
// #14: 10,000 registrations on one replica), with real parts: envtest's API server, the
// whole app, real keys in real Secrets.
package heap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testheap"
	"github.com/ltiop/ltiop/test/utils/testkeys"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// A logger, as main sets one: without, controller-runtime keeps every logger made.
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(app.Scheme(), "heap"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// The live heap of an ltiop (web server and controllers, one replica) per registration, as
// after a restart with n registrations and their key Secrets: the slope between a started
// ltiop serving few and one serving many. A slope, not "many less none": what an ltiop
// allocates once it serves anything (the event broadcaster's buffers, a first key set
// build) is not a cost per registration, and at 400 it read as ~1.5 KB of one. At 10,000
// registrations each KB here is 10 MB of live heap, and about twice that of RSS with the
// collector's default pacing. Holding the registrations and their Secrets in two caches
// (the controllers' and the web server's), or a parsed private key per registration, is
// over the bound.
func TestLiveHeapPerRegistration(t *testing.T) {
	const ns, few, many = "heap", 100, 500
	ctx := env.Context()
	create(ctx, t, ns, 0, few)
	fewHeap := measure(ctx, t, ns, few)
	create(ctx, t, ns, few, many)
	manyHeap := measure(ctx, t, ns, many)

	per := (manyHeap - fewHeap) / (many - few)
	t.Logf("live heap: %d KiB serving %d, %d KiB serving %d: %d bytes per registration", fewHeap>>10, few, manyHeap>>10, many, per)
	if per > 12<<10 {
		t.Errorf("ltiop holds %d bytes of live heap per registration, want at most 12 KiB", per)
	}
}

// measure starts an ltiop on namespace ns, waits until it serves its n registrations
// Ready with their keys, and returns its live heap; the ltiop is stopped on return.
func measure(parent context.Context, t *testing.T, ns string, n int) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(parent)
	cfg := config.Default()
	cfg.ShutdownDelay.Duration = 0
	cfg.Namespace, cfg.DevMode, cfg.MetricsListen = ns, true, "0"
	cfg.Listen = freeAddr(t)
	cfg.PublicURL = "http://" + cfg.Listen
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, &cfg, rest.CopyConfig(env.Config), func(o *ctrl.Options) {
		o.Controller.SkipNameValidation = ptr.To(true) // two ltiops, one after the other
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- a.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("ltiop stopped with %v", err)
		}
	}()

	deadline := time.Now().Add(2 * time.Minute)
	for ready := 0; ; {
		if a.Registry.HasSynced() {
			ready = 0
			for _, p := range a.Registry.List(nil) {
				if p.Ready && p.Key != nil {
					ready++
				}
			}
			// /lti/keys rebuilt too: a build in flight holds a second copy of it.
			if _, fresh := a.Registry.JWKS(); ready == n && fresh {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d registrations Ready with their key after 2 minutes", ready, n)
		}
		time.Sleep(50 * time.Millisecond) // polling the registry, which has no wait for "all"
	}
	live := testheap.Live()
	// HEAPPROF=file writes the heap profiles file.100 and file.500, to see what grew:
	// go tool pprof -sample_index=inuse_space -diff_base file.100 heap.test file.500
	if f := os.Getenv("HEAPPROF"); f != "" {
		w, err := os.Create(fmt.Sprintf("%s.%d", f, n)) //nolint:gosec // G703: a path the developer running the test chose
		if err == nil {
			err = errors.Join(pprof.WriteHeapProfile(w), w.Close())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.KeepAlive(a)
	return live
}

// create makes registrations from to to (exclusive) and their key Secrets (the fixture keys, which the
// controller adopts as they are: the test measures memory, not key generation).
func create(ctx context.Context, t *testing.T, ns string, from, to int) {
	t.Helper()
	c := env.Client
	pems := [][]byte{testkeys.RSAKeyPEM(t, 0), testkeys.RSAKeyPEM(t, 1), testkeys.RSAKeyPEM(t, 2)}
	for i := from; i < to; i++ {
		lms := fmt.Sprintf("https://lms-%05d.heap.example", i)
		reg := &ltiv1.PlatformRegistration{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("lms-%05d", i)},
			Spec: ltiv1.PlatformRegistrationSpec{
				URL: ltiv1.EndpointURL(lms), ClientID: fmt.Sprint(10000 + i), Name: fmt.Sprintf("LMS %d", i),
				AuthenticationEndpoint: ltiv1.EndpointURL(lms + "/auth"), AccesstokenEndpoint: ltiv1.EndpointURL(lms + "/token"),
				AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms + "/jwks"},
			},
		}
		if err := c.Create(ctx, reg); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controllers.KeySecretName(reg.Name),
				Labels: map[string]string{ltiv1.LabelManagedBy: ltiv1.ManagedByValue, ltiv1.LabelPlatformRegistration: reg.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: ltiv1.GroupVersion.String(), Kind: "PlatformRegistration",
					Name: reg.Name, UID: reg.UID, Controller: ptr.To(true)}}},
			Type: ltiv1.SecretTypeToolKey,
			Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pems[i%len(pems)]},
		}
		if err := c.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	var list ltiv1.PlatformRegistrationList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != to {
		t.Fatalf("listed %d registrations (%v), want %d", len(list.Items), err, to)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
