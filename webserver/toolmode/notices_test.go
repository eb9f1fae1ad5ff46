package toolmode_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/toolmode"
	"github.com/ltiop/ltiop/webserver/webhook"
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
