package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/webhook"
)

// demoWebhookSecret signs the notices ltiop delivers to the demo integrator (a demo value:
// a real one is random, 24 to 64 bytes).
const demoWebhookSecret = "whsec_ZGVtby13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVm"

// webhookPath is the demo integrator's webhook, beside its Launch URL.
const webhookPath = "/app/hooks/lti"

// hookLog is what the demo integrator's webhook received, verified.
type hookLog struct {
	mu       sync.Mutex
	received [][]byte
	arrived  chan struct{}
}

func newHookLog() *hookLog { return &hookLog{arrived: make(chan struct{}, 16)} }

func (d *demoLMS) webhookURL() string { return d.base + webhookPath }

// appWebhook is the demo integrator's webhook: it verifies the Standard Webhooks signature
// as any integrator would, keeps the body, and answers 204.
func (d *demoLMS) appWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	key, kerr := webhook.ParseSecret(demoWebhookSecret)
	if err != nil || kerr != nil || webhook.Verify(key, r.Header, body, time.Now(), 5*time.Minute) != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	d.hooks.mu.Lock()
	d.hooks.received = append(d.hooks.received, body)
	d.hooks.mu.Unlock()
	select {
	case d.hooks.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// notices registers the demo integrator for submission notices (PUT /api/notices/handlers,
// which registers ltiop's own endpoint with the LMS), has the LMS send a signed
// LtiAssetProcessorSubmissionNotice for a demo submission, and returns the webhook the
// integrator received, its notice key shortened.
func (d *demoLMS) notices(ctx context.Context, ltik string) (handler, received []byte, err error) {
	handler, err = d.api(ctx, ltik, http.MethodPut, "/api/notices/handlers",
		map[string]string{"noticeType": lmssim.NoticeAssetProcessorSubmission}, http.StatusOK)
	if err != nil {
		return nil, nil, err
	}
	delivery, err := d.sim.SendNotices(ctx, lmssim.NoticeAssetProcessorSubmission, d.sim.NoticeClaims(lmssim.NoticeAssetProcessorSubmission))
	if err != nil {
		return nil, nil, err
	}
	if delivery.Status != http.StatusOK {
		return nil, nil, fmt.Errorf("ltiop answered the LMS's notice with HTTP %d: %s", delivery.Status, delivery.Body)
	}
	select {
	case <-d.hooks.arrived:
	case <-time.After(10 * time.Second):
		return nil, nil, fmt.Errorf("the webhook received nothing")
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	d.hooks.mu.Lock()
	last := d.hooks.received[len(d.hooks.received)-1]
	d.hooks.mu.Unlock()
	return handler, shortenNoticeKey(last), nil
}

// shortenNoticeKey indents the webhook body with its credential cut short: the demo prints it.
func shortenNoticeKey(body []byte) []byte {
	var ev map[string]any
	if json.Unmarshal(body, &ev) != nil {
		return body
	}
	if data, ok := ev["data"].(map[string]any); ok {
		if k, ok := data["noticeKey"].(string); ok && len(k) > 16 {
			data["noticeKey"] = k[:16] + "…"
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(ev)
	return out.Bytes()
}
