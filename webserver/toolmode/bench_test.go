package toolmode_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keyring"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/advantage"
	"github.com/ltiop/ltiop/webserver/httpapi"
	"github.com/ltiop/ltiop/webserver/registry"
	"github.com/ltiop/ltiop/webserver/sessions"
	"github.com/ltiop/ltiop/webserver/toolmode"
)

const benchAPIKey = "bench-api-key"

// rig is ltiop's tool mode without Kubernetes: a registry fed by hand, a keyring, and
// the handlers on a loopback server, with a simulated LMS whose key set is served too.
type rig struct {
	lms    *lmssim.LMS
	tool   *toolmode.Tool
	ltiop  *httptest.Server
	server atomic.Int64 // nanoseconds spent inside the handlers
}

func newRig(b testing.TB) *rig {
	b.Helper()
	lmsSrv := httptest.NewServer(nil)
	b.Cleanup(lmsSrv.Close)
	lms, err := lmssim.New(lmsSrv.URL, "bench-client", "bench-deployment")
	if err != nil {
		b.Fatal(err)
	}
	lmsSrv.Config.Handler = lms.Handler()

	rg := &rig{lms: lms}
	mux := http.NewServeMux()
	rg.ltiop = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		mux.ServeHTTP(w, r)
		rg.server.Add(int64(time.Since(start)))
	}))
	b.Cleanup(rg.ltiop.Close)
	lms.ToolLoginURL, lms.ToolRedirectURI = rg.ltiop.URL+paths.Login, rg.ltiop.URL+paths.Launch

	reg := registry.New()
	pr := &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns", UID: "bench-uid", Generation: 1},
		Spec: ltiv1.PlatformRegistrationSpec{
			URL: ltiv1.EndpointURL(lms.Issuer), ClientID: lms.ClientID, Name: "Bench LMS",
			AuthenticationEndpoint: ltiv1.EndpointURL(lms.Issuer + lmssim.AuthPath),
			AccesstokenEndpoint:    ltiv1.EndpointURL(lms.Issuer + lmssim.TokenPath),
			AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms.Issuer + lmssim.JWKSPath},
		},
		Status: ltiv1.PlatformRegistrationStatus{Conditions: []metav1.Condition{{
			Type: ltiv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
		}}},
	}
	reg.Apply(pr)
	private, _ := keys.Generate()
	pemBytes, _ := keys.EncodePrivateKey(private)
	reg.ApplySecret(func(string, ...any) {}, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-tool-key", OwnerReferences: []metav1.OwnerReference{{
			Kind: "PlatformRegistration", Name: "bench", UID: "bench-uid", Controller: ptr.To(true)}}},
		Type: ltiv1.SecretTypeToolKey, Data: map[string][]byte{ltiv1.SecretKeyPrivateKey: pemBytes},
	})

	key, _ := keyring.Sealing.NewKey(time.Now().Add(-time.Minute), 0)
	ring, err := sessions.NewKeyring([]keyring.SealingKey{key})
	if err != nil {
		b.Fatal(err)
	}
	apiKey := httpapi.NewAPIKey("s", "k")
	apiKey.Set(benchAPIKey)
	rg.tool, err = toolmode.New(toolmode.Options{
		PublicURL: rg.ltiop.URL, LaunchURL: "https://app.example/launch", DevMode: true, ClockSkew: time.Minute,
	}, reg, registry.NewPeerKeys(nil), ring, sessions.NewReplayCache(1<<20), apiKey, advantage.NewClient(nil))
	if err != nil {
		b.Fatal(err)
	}
	mux.HandleFunc("GET "+paths.Login, rg.tool.Login)
	mux.HandleFunc("POST "+paths.Launch, rg.tool.Launch)
	mux.Handle("GET /api/idtoken", rg.tool.RequireLtik(http.HandlerFunc(rg.tool.IDToken)))
	return rg
}

// launch runs one login and launch over loopback; the LMS's RSA signature is made with
// the timer stopped (it is the platform's work, not ltiop's).
func (rg *rig) launch(b *testing.B, client *http.Client) string {
	login := url.Values{"iss": {rg.lms.Issuer}, "client_id": {rg.lms.ClientID}, "login_hint": {"u"},
		"target_link_uri": {rg.ltiop.URL + paths.Launch}, "lti_deployment_id": {"bench-deployment"}}
	res, err := client.Get(rg.ltiop.URL + paths.Login + "?" + login.Encode())
	if err != nil || res.StatusCode != http.StatusFound {
		b.Fatalf("login: %v %v", res, err)
	}
	res.Body.Close()
	auth, _ := url.Parse(res.Header.Get("Location"))
	q := auth.Query()

	b.StopTimer()
	token, err := rg.lms.Sign(rg.lms.Claims("u", q.Get("nonce"), rg.ltiop.URL+paths.Launch), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()

	res, err = client.PostForm(rg.ltiop.URL+paths.Launch, url.Values{"id_token": {token}, "state": {q.Get("state")}})
	if err != nil || res.StatusCode != http.StatusSeeOther {
		b.Fatalf("launch: %v %v", res, err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	return loc.Query().Get("ltik")
}

func benchClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// BenchmarkLoginLaunchRoundTrip: the whole login + launch over loopback HTTP. The
// "server-µs/op" metric is the time spent inside ltiop's handlers.
func BenchmarkLoginLaunchRoundTrip(b *testing.B) {
	rg := newRig(b)
	client := benchClient()
	rg.launch(b, client) // warm the key-set cache
	rg.server.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if rg.launch(b, client) == "" {
			b.Fatal("no ltik")
		}
	}
	b.ReportMetric(float64(rg.server.Load())/float64(b.N)/1e3, "server-µs/op")
}

// BenchmarkIDToken: GET /api/idtoken, from the Authorization header to the JSON body, for
// an ltik already opened on this replica (the common case: one launch, several calls).
func BenchmarkIDToken(b *testing.B) {
	rg := newRig(b)
	ltik := rg.launch(b, benchClient())
	h := rg.tool.RequireLtik(http.HandlerFunc(rg.tool.IDToken))
	req := httptest.NewRequest("GET", "/api/idtoken", nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+benchAPIKey+":"+ltik)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}

// BenchmarkIDTokenCold: GET /api/idtoken for an ltik this replica has not opened yet
// (decrypt, inflate and parse the claims on every call).
func BenchmarkIDTokenCold(b *testing.B) {
	rg := newRig(b)
	ltik := rg.launch(b, benchClient())
	h := rg.tool.RequireLtik(http.HandlerFunc(rg.tool.IDToken))
	req := httptest.NewRequest("GET", "/api/idtoken", nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+benchAPIKey+":"+ltik)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		toolmode.ForgetOpenedLtiks(rg.tool)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}
