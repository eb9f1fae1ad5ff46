package toolmode_test

import (
	"encoding/json"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

const rigWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// noticeRig is the rig with notices delivered under the Public policy (127.0.0.1 is the
// outside world, 127.0.0.2 the inside) to the webhook the registration names.
func noticeRig(t testing.TB, webhookURL string) *rig {
	t.Helper()
	secret := webhook.NewSecret("s", "k")
	if err := secret.Set(rigWebhookSecret); err != nil {
		t.Fatal(err)
	}
	return newRig(t, func(c *rigConfig) {
		c.opts.Notices = toolmode.NoticeOptions{Webhook: &webhook.Sender{Client: webhook.NewClient(testoutbound.Public()), Key: secret.Key}}
		c.configure = func(pr *ltiv1.PlatformRegistration) { pr.Spec.NoticeWebhookURL = ltiv1.EndpointURL(webhookURL) }
	})
}

func (rg *rig) postNotice(t testing.TB, jwts ...string) (int, string) {
	t.Helper()
	var batch struct {
		Notices []map[string]string `json:"notices"`
	}
	for _, j := range jwts {
		batch.Notices = append(batch.Notices, map[string]string{"jwt": j})
	}
	res := rg.call(t, nil, "POST", paths.NoticeEndpoint("bench"), nil, batch)
	return res.Status, res.Body
}

// The SSRF attack through the webhook: a registration whose webhook points inside the
// network gets nothing delivered there; the platform is told to retry, and once the webhook
// is fixed the same notice is delivered (it was not recorded).
func TestNoticeWebhookInsideTheNetworkIsRefused(t *testing.T) {
	in := testoutbound.NewInternal(t)
	rg := noticeRig(t, in.URL+"/hook")
	notice := rg.sign(t, rg.lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission))
	status, body := rg.postNotice(t, notice)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("webhook inside the network: %d %s", status, body)
	}
	in.Untouched(t)

	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(hook.Close)
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.NoticeWebhookURL = ltiv1.EndpointURL(hook.URL) })
	if status, body := rg.postNotice(t, notice); status != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("after the fix: %d %s, %d deliveries", status, body, hits.Load())
	}
}

// A registration with no webhook and no default refuses notices before validating them.
func TestNoticesNotConfigured(t *testing.T) {
	rg := newRig(t)
	status, body := rg.postNotice(t, rg.sign(t, rg.lms.NoticeClaims(lmssim.NoticeHelloWorld)))
	if status != http.StatusServiceUnavailable || !strings.Contains(body, toolmode.CodeNoticesNotConfigured) {
		t.Fatalf("%d %s", status, body)
	}
}

// BenchmarkNoticeDelivery is the notice endpoint's hot path: a batch of one new notice,
// validated, sealed into a notice key, signed and delivered to a webhook on loopback.
func BenchmarkNoticeDelivery(b *testing.B) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	b.Cleanup(hook.Close)
	rg := noticeRig(b, hook.URL)
	jwts := make([]string, b.N)
	for i := range jwts {
		jwts[i] = rg.sign(b, rg.lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if status, body := rg.postNotice(b, jwts[i]); status != http.StatusOK {
			b.Fatalf("%d %s", status, body)
		}
	}
}

// noticeKeyFrom has the LMS send one notice of noticeType through ltiop and returns the
// notice key of the webhook the integrator received.
func noticeKeyFrom(t *testing.T, rg *rig, got <-chan []byte, noticeType string) string {
	t.Helper()
	if status, body := rg.postNotice(t, rg.sign(t, rg.lms.NoticeClaims(noticeType))); status != http.StatusOK {
		t.Fatalf("notice: %d %s", status, body)
	}
	var ev struct {
		Data struct {
			NoticeKey string `json:"noticeKey"`
		} `json:"data"`
	}
	if err := json.Unmarshal(<-got, &ev); err != nil || ev.Data.NoticeKey == "" {
		t.Fatalf("webhook body: %v", err)
	}
	return ev.Data.NoticeKey
}

// A notice key opens until notices.keyLifetime has passed, and while its registration is
// the one that received the notice and is active; every refusal carries the notice key's
// code, the registration's with the precise reason.
func TestNoticeKeyLifetimeAndRegistration(t *testing.T) {
	got := make(chan []byte, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(hook.Close)
	rg := noticeRig(t, hook.URL)
	auth := func(key string) map[string]string {
		return map[string]string{"Authorization": "NOTICE-AUTH-V1 " + benchAPIKey + ":" + key}
	}
	check := func(key string, wantStatus int, wantCode, wantReason string) {
		t.Helper()
		res := rg.call(t, nil, "GET", "/api/memberships", auth(key), nil)
		var env struct {
			Details struct{ Message, Reason string } `json:"details"`
		}
		_ = json.Unmarshal([]byte(res.Body), &env)
		if res.Status != wantStatus || env.Details.Message != wantCode || env.Details.Reason != wantReason {
			t.Fatalf("got %d %s, want %d %s (reason %q)", res.Status, res.Body, wantStatus, wantCode, wantReason)
		}
	}

	key := noticeKeyFrom(t, rg, got, lmssim.NoticeAssetProcessorSubmission)
	// Authenticated: the notice names no roster.
	check(key, http.StatusForbidden, toolmode.CodeServiceNotAvailable, "")
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = ptr.To(false) })
	check(key, http.StatusUnauthorized, toolmode.CodeInvalidNoticeKeyAuth, lti.CodeUnregistered)
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.Spec.Active = nil })
	check(key, http.StatusForbidden, toolmode.CodeServiceNotAvailable, "")
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.UID = "bench-uid-2" }) // re-created under its name
	check(key, http.StatusUnauthorized, toolmode.CodeInvalidNoticeKeyAuth, lti.CodeUnregistered)
	rg.update(func(pr *ltiv1.PlatformRegistration) { pr.UID = "bench-uid" })
	check(key, http.StatusForbidden, toolmode.CodeServiceNotAvailable, "")

	rg.clock.Advance(59 * time.Minute)
	check(key, http.StatusForbidden, toolmode.CodeServiceNotAvailable, "")
	rg.clock.Advance(time.Minute + time.Second)
	check(key, http.StatusUnauthorized, toolmode.CodeInvalidNoticeKeyAuth, "")
}
