package onboarding_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testclient"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/clients/dynreg"
	"github.com/ltiop/ltiop/webserver/handlers/onboarding"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const (
	namespace = "ltiop"
	publicURL = "https://ltiop.example"
)

// harness serves onboarding on loopback next to a simulated LMS offering dynamic
// registration. Writes go to controller-runtime's fake client (the API server); the
// registry, the read side, is fed by hand with what was written, as the informer would.
type harness struct {
	t       *testing.T
	lms     *lmssim.LMS
	lmsURL  string
	reg     *registry.Registry
	k8s     client.Client // the fake API server
	ltiop   *httptest.Server
	o       *onboarding.Onboarding
	keyring *sessions.Keyring
	clock   atomic.Int64 // offset of the onboarding clock, ns

	writes       testclient.Gate                                               // creates and applies pass it
	statusWrites testclient.Gate                                               // status writes pass it
	intercept    atomic.Pointer[func(http.ResponseWriter, *http.Request) bool] // answers LMS requests first
}

type harnessConfig struct {
	opts   onboarding.Options
	noKeys bool
	mode   lmssim.DeploymentMode
	lms    func(*lmssim.LMS)
}

func newHarness(t *testing.T, configure ...func(*harnessConfig)) *harness {
	t.Helper()
	cfg := harnessConfig{opts: onboarding.Options{
		Tool:      dynreg.ToolConfig{PublicURL: publicURL, DeepLinking: true},
		Namespace: namespace,
		Outbound:  outbound.Policy{AllowHTTP: true, AllowLoopback: true}, // the LMS is on loopback
	}}
	for _, c := range configure {
		c(&cfg)
	}
	h := &harness{t: t, reg: registry.New()}

	lmsSrv := httptest.NewServer(nil)
	t.Cleanup(lmsSrv.Close)
	lms, err := lmssim.New(lmsSrv.URL, "dr-client", "dr-deployment")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.lms != nil {
		cfg.lms(lms)
	}
	lms.EnableDynamicRegistration(cfg.mode)
	sim := lms.Handler()
	lmsSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := h.intercept.Load(); f != nil && (*f)(w, r) {
			return
		}
		sim.ServeHTTP(w, r)
	})
	h.lms, h.lmsURL = lms, lmsSrv.URL

	h.k8s = interceptor.NewClient(testclient.NewFake(t), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			testclient.Created(obj)
			return c.Create(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if err := h.statusWrites.Pass(); err != nil {
				return err
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})

	var sealing []keyring.SealingKey
	if !cfg.noKeys {
		key, err := keyring.Sealing.NewKey(time.Now().Add(-time.Minute), 0)
		if err != nil {
			t.Fatal(err)
		}
		sealing = append(sealing, key)
	}
	if h.keyring, err = sessions.NewKeyring(sealing); err != nil {
		t.Fatal(err)
	}
	h.o = onboarding.New(cfg.opts, h.reg, h.k8s, h.keyring, replay.NewMemory(10_000))
	onboarding.SetClock(h.o, func() time.Time { return time.Now().Add(time.Duration(h.clock.Load())) })
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+paths.Register, h.o.Register)
	mux.HandleFunc("GET "+paths.RegisterWithToken, h.o.RegisterWithToken)
	mux.HandleFunc("GET "+paths.CanvasConfiguration, h.o.CanvasConfiguration)
	mux.HandleFunc("GET /api/registrations/{id}", h.o.Get)
	mux.HandleFunc("POST /api/registrations/{id}/complete", h.o.Complete)
	h.ltiop = httptest.NewServer(httpapi.LimitBody(1 << 20)(mux))
	t.Cleanup(h.ltiop.Close)
	return h
}

// interceptLMS puts f in front of the simulator until the test ends.
func (h *harness) interceptLMS(f func(http.ResponseWriter, *http.Request) bool) {
	h.intercept.Store(&f)
	h.t.Cleanup(func() { h.intercept.Store(nil) })
}

// stored returns the registrations the fake API server holds.
func (h *harness) stored() []ltiv1.PlatformRegistration {
	h.t.Helper()
	return testclient.Stored(h.t, h.k8s, namespace)
}

// only returns the one stored registration.
func (h *harness) only() *ltiv1.PlatformRegistration {
	h.t.Helper()
	list := h.stored()
	if len(list) != 1 {
		h.t.Fatalf("%d registrations stored, want 1", len(list))
	}
	return &list[0]
}

// show feeds the registry with a stored registration, as the informer would.
func (h *harness) show(pr *ltiv1.PlatformRegistration) {
	pr = pr.DeepCopy()
	pr.Status.Conditions = []metav1.Condition{{Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue,
		ObservedGeneration: pr.Generation, Reason: ltiv1.ReasonReady}}
	h.reg.Apply(pr)
}

// open is the LMS's frame opening a URL (no redirect followed); jsonErrors asks for the
// error envelope instead of the HTML page.
func (h *harness) open(u string, jsonErrors bool) testhttp.Reply {
	h.t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if jsonErrors {
		req.Header.Set("Accept", "application/json")
	}
	return testhttp.Do(h.t, testhttp.NoRedirects(nil), req)
}

// call sends an API request to onboarding; a body that is not a string is sent as JSON.
func (h *harness) call(method, path string, body any, header ...string) testhttp.Reply {
	h.t.Helper()
	return testhttp.Do(h.t, testhttp.NoRedirects(nil), testhttp.NewRequest(h.t, method, h.ltiop.URL+path, body, header...))
}

// start is the URL the LMS opens to register the tool, with a fresh registration token.
func (h *harness) start() string { return h.lms.RegistrationStart(h.ltiop.URL + paths.Register) }

var errAPIServerDown = errors.New("dial tcp 10.96.0.1:443: connect: connection refused")
