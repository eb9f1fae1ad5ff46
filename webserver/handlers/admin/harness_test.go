package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/test/utils/testclient"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

const namespace = "ltiop"

// toolKey is the testkeys fixture key that is the controller's tool key: the platforms'
// keys in these tests are generated apart.
const toolKey = 2

// harness serves the platforms API on loopback. Writes go to controller-runtime's fake
// client, standing in for the API server; the registry (the read side) is fed by hand
// from what was written, as the informers and the controller would: the registration,
// Ready for its generation, and its key Secret.
type harness struct {
	t   *testing.T
	reg *registry.Registry
	k8s client.Client // the fake API server, without interception
	api *httptest.Server

	writes        testclient.Gate // every write passes it
	feed          atomic.Bool     // writes are shown in the registry (default true)
	keyDelay      atomic.Int64    // the controller's key Secret follows after this long
	deleteOnWrite atomic.Bool     // an update is answered by the registration's deletion
	toolKeyPEM    []byte          // the controller's key Secret holds it
	cursors       *sessions.Keyring
}

type harnessConfig struct {
	devMode bool
	keyWait time.Duration
}

func newHarness(t *testing.T, configure ...func(*harnessConfig)) *harness {
	t.Helper()
	cfg := harnessConfig{keyWait: 500 * time.Millisecond}
	for _, c := range configure {
		c(&cfg)
	}
	h := &harness{t: t, reg: registry.New(), toolKeyPEM: testkeys.RSAKeyPEM(t, toolKey)}
	h.feed.Store(true)
	writer := interceptor.NewClient(testclient.NewFake(t), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			testclient.Created(obj)
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			h.show(ctx, obj.GetName())
			return nil
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if err := c.Apply(ctx, obj, opts...); err != nil {
				return err
			}
			h.showAfterUpdate(ctx, obj)
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			h.showAfterUpdate(ctx, obj)
			return nil
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := h.writes.Pass(); err != nil {
				return err
			}
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			if h.feed.Load() {
				h.reg.Forget(obj)
			}
			return nil
		},
	})
	h.k8s = writer // the tests read through it too; reads are not intercepted
	sealing, err := keyring.Sealing.NewKey(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.cursors, err = sessions.NewKeyring([]keyring.SealingKey{sealing}); err != nil {
		t.Fatal(err)
	}
	p := &admin.Platforms{Registry: h.reg, Client: writer, Namespace: namespace, DevMode: cfg.devMode, KeyWait: cfg.keyWait, Cursors: h.cursors}
	mux := http.NewServeMux()
	for _, prefix := range []string{"/api/platforms", "/admin/platforms"} {
		mux.HandleFunc("GET "+prefix, p.List)
		mux.HandleFunc("POST "+prefix, p.Create)
		mux.HandleFunc("GET "+prefix+"/{id}", p.Get)
		mux.HandleFunc("PUT "+prefix+"/{id}", p.Update)
		mux.HandleFunc("DELETE "+prefix+"/{id}", p.Delete)
		mux.HandleFunc("POST "+prefix+"/{id}/activate", p.Activate)
		mux.HandleFunc("POST "+prefix+"/{id}/deactivate", p.Deactivate)
	}
	h.api = httptest.NewServer(httpapi.LimitBody(64 << 10)(mux))
	t.Cleanup(h.api.Close)
	p.PublicURL = h.api.URL
	return h
}

// show feeds the registry with the stored registration, Ready for its generation, and
// (after keyDelay) its key Secret.
func (h *harness) show(ctx context.Context, name string) {
	if !h.feed.Load() {
		return
	}
	var pr ltiv1.PlatformRegistration
	if err := h.k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pr); err != nil {
		h.t.Errorf("reading back %s: %v", name, err)
		return
	}
	pr.Status.Conditions = []metav1.Condition{{Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue,
		ObservedGeneration: pr.Generation, Reason: ltiv1.ReasonReady}}
	h.reg.Apply(&pr)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-tool-key", Namespace: namespace, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: ltiv1.GroupVersion.String(), Kind: "PlatformRegistration", Name: name, UID: pr.UID, Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: h.toolKeyPEM},
	}
	if d := time.Duration(h.keyDelay.Load()); d > 0 {
		time.AfterFunc(d, func() { h.reg.ApplySecret(func(string, ...any) {}, secret) })
		return
	}
	h.reg.ApplySecret(func(string, ...any) {}, secret)
}

func (h *harness) showAfterUpdate(ctx context.Context, obj any) {
	name := ""
	switch o := obj.(type) {
	case client.Object:
		name = o.GetName()
	default:
		b, _ := json.Marshal(o)
		var m struct{ Metadata struct{ Name string } }
		_ = json.Unmarshal(b, &m)
		name = m.Metadata.Name
	}
	if h.deleteOnWrite.Load() {
		if p := h.reg.Get(name); p != nil {
			h.reg.Forget(&ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Name: name, UID: p.UID}})
		}
		return
	}
	h.show(ctx, name)
}

// stored returns the registrations the fake API server holds.
func (h *harness) stored() []ltiv1.PlatformRegistration {
	h.t.Helper()
	return testclient.Stored(h.t, h.k8s, namespace)
}

// get returns the stored registration name.
func (h *harness) get(name string) *ltiv1.PlatformRegistration {
	h.t.Helper()
	var pr ltiv1.PlatformRegistration
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &pr); err != nil {
		h.t.Fatalf("registration %s: %v", name, err)
	}
	return &pr
}

// call sends a request; a body that is not a string is sent as JSON.
func (h *harness) call(method, path string, body any, header ...string) testhttp.Reply {
	h.t.Helper()
	return testhttp.Do(h.t, http.DefaultClient, testhttp.NewRequest(h.t, method, h.api.URL+path, body, header...))
}

var errAPIServerDown = errors.New("dial tcp 10.96.0.1:443: connect: connection refused")

// update changes a stored registration directly (as kubectl would) and shows it.
func (h *harness) update(name string, change func(*ltiv1.PlatformRegistration)) {
	h.t.Helper()
	pr := h.get(name)
	change(pr)
	if err := h.k8s.Update(context.Background(), pr); err != nil {
		h.t.Fatal(err)
	}
	h.show(context.Background(), name)
}
