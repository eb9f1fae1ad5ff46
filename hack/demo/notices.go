package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
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
// LtiAssetProcessorSubmissionNotice for a demo submission, and returns the webhook body the
// integrator received.
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
	return handler, last, nil
}

// submissionWebhook is what the demo integrator reads of a submission notice's webhook.
type submissionWebhook struct {
	Data struct {
		NoticeKey string `json:"noticeKey"`
		Claims    struct {
			AssetService struct {
				Assets []struct {
					ID       string `json:"asset_id"`
					Filename string `json:"filename"`
				} `json:"assets"`
			} `json:"https://purl.imsglobal.org/spec/lti/claim/assetservice"`
		} `json:"claims"`
	} `json:"data"`
}

// noticeWork is what the demo integrator does with a submission notice, as a background
// job with no launch: with the notice key from the webhook it downloads each submitted
// asset (GET /api/assets/{assetId}) and posts a report of the first (POST /api/reports). It
// returns a summary of the downloads and the report as the LMS recorded it.
func (d *demoLMS) noticeWork(ctx context.Context, webhookBody []byte) (downloads string, recorded []byte, err error) {
	var ev submissionWebhook
	if err := json.Unmarshal(webhookBody, &ev); err != nil {
		return "", nil, fmt.Errorf("reading the webhook: %w", err)
	}
	assets := ev.Data.Claims.AssetService.Assets
	if ev.Data.NoticeKey == "" || len(assets) == 0 {
		return "", nil, fmt.Errorf("the webhook carries no notice key or no asset")
	}
	auth := "NOTICE-AUTH-V1 " + d.apiKey + ":" + ev.Data.NoticeKey
	var sum strings.Builder
	for _, a := range assets {
		body, contentType, err := d.download(ctx, auth, a.ID)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&sum, "  GET /api/assets/%s: %s (%s, %d bytes): %q\n", a.ID, a.Filename, contentType, len(body), body)
	}
	report := map[string]any{"assetId": assets[0].ID, "type": "originality", "processingProgress": "Processed",
		"priority": 2, "title": "Originality", "result": "9%", "scoreGiven": 9, "scoreMaximum": 100,
		"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.",
		"comment": "Checked from the submission notice, with its notice key", "visibleToOwner": true}
	if _, err := d.apiAs(ctx, auth, http.MethodPost, "/api/reports", report, http.StatusCreated); err != nil {
		return "", nil, err
	}
	reports := d.sim.Reports()
	if len(reports) == 0 {
		return "", nil, fmt.Errorf("the LMS recorded no report")
	}
	recorded, _ = json.MarshalIndent(reports[len(reports)-1], "", "  ")
	return sum.String(), recorded, nil
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
