package integratorsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
)

// Delivery is one message the integrator's webhook received.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// Webhook is the integrator's webhook (docs/notices.md, "The webhook"): it keeps every
// delivery and answers with the status it is told to (200 unless set). Made with a key, it
// verifies the Standard Webhooks signature as any integrator would and refuses a bad one
// with 401, keeping nothing; made without, it keeps every delivery for its caller to check.
type Webhook struct {
	key     []byte
	status  atomic.Int64
	mu      sync.Mutex
	got     []Delivery
	arrived chan struct{} // a token after each delivery kept
}

// NewWebhook returns a webhook that verifies with key (nil: keeps every delivery unchecked).
func NewWebhook(key []byte) *Webhook {
	h := &Webhook{key: key, arrived: make(chan struct{}, 1)}
	h.status.Store(http.StatusOK)
	return h
}

// ServeHTTP receives one delivery.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil || (h.key != nil && stdwebhook.Verify(h.key, r.Header, body, time.Now()) != nil) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	h.mu.Lock()
	h.got = append(h.got, Delivery{Header: r.Header.Clone(), Body: body})
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(int(h.status.Load()))
}

// SetStatus makes the webhook answer status from now on.
func (h *Webhook) SetStatus(status int) { h.status.Store(int64(status)) }

// Received returns the deliveries kept, oldest first.
func (h *Webhook) Received() []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Delivery(nil), h.got...)
}

// Reset forgets the deliveries kept.
func (h *Webhook) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = nil
}

// WaitFor waits until n deliveries are kept and returns them.
func (h *Webhook) WaitFor(ctx context.Context, n int) ([]Delivery, error) {
	for {
		if got := h.Received(); len(got) >= n {
			return got, nil
		}
		select {
		case <-h.arrived:
		case <-ctx.Done():
			return nil, errors.New("the webhook received nothing")
		}
	}
}

// NoticeWebhook is the body of a notice's webhook as the integrator reads it
// (docs/notices.md, "The webhook"), with the claims of a submission notice.
type NoticeWebhook struct {
	Data NoticeData `json:"data"`
}

// NoticeData is the data of a notice's webhook.
type NoticeData struct {
	Platform  map[string]string `json:"platform"`
	NoticeKey string            `json:"noticeKey"`
	Claims    NoticeClaims      `json:"claims"`
}

// NoticeClaims are the claims of a submission notice the integrator reads.
type NoticeClaims struct {
	AssetService struct {
		Assets []NoticeAsset `json:"assets"`
	} `json:"https://purl.imsglobal.org/spec/lti/claim/assetservice"`
	Submission map[string]any `json:"https://purl.imsglobal.org/spec/lti/claim/submission"`
}

// NoticeAsset is one asset a submission notice names.
type NoticeAsset struct {
	ID          string `json:"asset_id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
}

// ShortenNoticeKey indents a webhook body with its credential cut short, for printing.
func ShortenNoticeKey(body []byte) []byte {
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

// Notices registers the integrator for submission notices (PUT /api/notices/handlers,
// which registers ltiop's own endpoint with the LMS), has the LMS send a signed
// LtiAssetProcessorSubmissionNotice for its submission, and returns the webhook body the
// integrator received.
func (a *App) Notices(ctx context.Context, ltik string) (handler, received []byte, err error) {
	handler, err = a.API(ctx, ltik, http.MethodPut, "/api/notices/handlers",
		map[string]string{"noticeType": lmssim.NoticeAssetProcessorSubmission}, http.StatusOK)
	if err != nil {
		return nil, nil, err
	}
	before := len(a.Hook.Received())
	delivery, err := a.LMS.SendNotices(ctx, lmssim.NoticeAssetProcessorSubmission, a.LMS.NoticeClaims(lmssim.NoticeAssetProcessorSubmission))
	if err != nil {
		return nil, nil, err
	}
	if delivery.Status != http.StatusOK {
		return nil, nil, fmt.Errorf("ltiop answered the LMS's notice with HTTP %d: %s", delivery.Status, delivery.Body)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := a.Hook.WaitFor(wctx, before+1)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, err
	}
	return handler, got[len(got)-1].Body, nil
}

// NoticeWork is what the integrator does with a submission notice, as a background job
// with no launch: with the notice key from the webhook it downloads each submitted asset
// (GET /api/assets/{assetId}) and posts a report of the first (POST /api/reports). It
// returns a summary of the downloads and the report as the LMS recorded it.
func (a *App) NoticeWork(ctx context.Context, webhookBody []byte) (downloads string, recorded []byte, err error) {
	var ev NoticeWebhook
	if err := json.Unmarshal(webhookBody, &ev); err != nil {
		return "", nil, fmt.Errorf("reading the webhook: %w", err)
	}
	assets := ev.Data.Claims.AssetService.Assets
	if ev.Data.NoticeKey == "" || len(assets) == 0 {
		return "", nil, errors.New("the webhook carries no notice key or no asset")
	}
	auth := "NOTICE-AUTH-V1 " + a.APIKey + ":" + ev.Data.NoticeKey
	var sum strings.Builder
	for _, as := range assets {
		body, contentType, err := a.Download(ctx, auth, as.ID)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&sum, "  GET /api/assets/%s: %s (%s, %d bytes): %q\n", as.ID, as.Filename, contentType, len(body), body)
	}
	report := map[string]any{"assetId": assets[0].ID, "type": "originality", "processingProgress": "Processed",
		"priority": 2, "title": "Originality", "result": "9%", "scoreGiven": 9, "scoreMaximum": 100,
		"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.",
		"comment": "Checked from the submission notice, with its notice key", "visibleToOwner": true}
	if _, err := a.APIAs(ctx, auth, http.MethodPost, "/api/reports", report, http.StatusCreated); err != nil {
		return "", nil, err
	}
	reports := a.LMS.Reports()
	if len(reports) == 0 {
		return "", nil, errors.New("the LMS recorded no report")
	}
	recorded, _ = json.MarshalIndent(reports[len(reports)-1], "", "  ")
	return sum.String(), recorded, nil
}
