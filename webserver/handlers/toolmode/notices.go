package toolmode

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// Codes of the notice endpoint and the notice key.
const (
	CodeNoticesNotConfigured  = "NOTICES_NOT_CONFIGURED"
	CodeInvalidNoticeBatch    = "INVALID_NOTICE_BATCH"
	CodeNoticeDeliveryFailed  = "NOTICE_DELIVERY_FAILED"
	defaultNoticeMaxBatch     = 100
	noticeRetryAfterSeconds   = 30
	noticeEventType           = "lti.notice"
	noticeReplayMinimumWindow = time.Hour
)

var noticesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ltiop_notices_total",
	Help: "Platform notices received, by outcome: delivered, duplicate, refused (not authentic or not valid), failed (the webhook did not take it).",
}, []string{"outcome"})

func init() { metrics.Registry.MustRegister(noticesTotal) }

// noticeBatch is the body a platform posts to a notice handler (PNS 1.0).
type noticeBatch struct {
	Notices []struct {
		JWT string `json:"jwt"`
	} `json:"notices"`
}

// noticeResult is one notice in the answer to the platform.
type noticeResult struct {
	ID     string `json:"id,omitempty"`
	Type   string `json:"type,omitempty"`
	Status string `json:"status"` // delivered, duplicate, refused, failed, skipped
	Error  string `json:"error,omitempty"`
}

// validNotice is a notice that passed T-PNS-01 to T-PNS-04.
type validNotice struct {
	claims *lti.Claims
	notice *lti.Notice
	index  int
}

// Notices serves POST /lti/notices/{platformId}: a platform's batch of signed notices. It is
// reachable without a credential: the body is bounded, the route rate-limited, and nothing
// leaves ltiop (no webhook, no record) for a batch no notice of which is authentic (T-PNS-05).
// Each valid notice not yet delivered goes to the integrator's webhook; its id is recorded
// only once the webhook answered 2xx (T-PNS-06), and a webhook that fails makes the answer
// an error, so that the platform sends the batch again (T-PNS-07).
func (t *Tool) Notices(w http.ResponseWriter, r *http.Request) {
	p := t.registry.Get(r.PathValue("platformId"))
	if p == nil || !usable(p) {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusNotFound, lti.CodeUnregistered,
			"No active platform registration has this notice endpoint."))
		return
	}
	httpapi.NotePlatform(r.Context(), p.ID)
	target := t.noticeWebhookURL(p)
	if target == "" || t.opts.Notices.Webhook == nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, CodeNoticesNotConfigured,
			"Notices are not enabled: no webhook URL is configured for this registration (notices.webhookUrl)."))
		return
	}
	var batch noticeBatch
	if !httpapi.ReadJSON(w, r, &batch) {
		return
	}
	maxBatch := t.opts.Notices.MaxBatch
	if maxBatch <= 0 {
		maxBatch = defaultNoticeMaxBatch
	}
	switch {
	case len(batch.Notices) == 0:
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, CodeInvalidNoticeBatch, "The batch holds no notices."))
		return
	case len(batch.Notices) > maxBatch:
		httpapi.WriteError(w, httpapi.Errorf(http.StatusRequestEntityTooLarge, CodeInvalidNoticeBatch,
			"The batch holds more than "+strconv.Itoa(maxBatch)+" notices."))
		return
	}

	// Authenticate every notice before anything leaves ltiop.
	now := t.now()
	results := make([]noticeResult, len(batch.Notices))
	var valid []validNotice
	var firstErr *apierr.Error
	for i, n := range batch.Notices {
		c, notice, verr := lti.ValidateNotice(r.Context(), n.JWT, t.keyFunc(p), lti.Policy{
			Issuer: string(p.Spec.URL), ClientID: p.Spec.ClientID, DeploymentIDs: p.Spec.DeploymentIDs,
			Now: now, Skew: max(t.opts.ClockSkew, time.Nanosecond),
		})
		if verr != nil {
			if verr.Status == http.StatusServiceUnavailable { // the key set is down: retry, all of it
				httpapi.WriteError(w, verr)
				return
			}
			if firstErr == nil {
				firstErr = verr
			}
			results[i] = noticeResult{Status: "refused", Error: verr.Code}
			noticesTotal.WithLabelValues("refused").Inc()
			continue
		}
		results[i] = noticeResult{ID: notice.ID, Type: notice.Type}
		valid = append(valid, validNotice{claims: c, notice: notice, index: i})
	}
	if len(valid) == 0 { // T-PNS-05
		log.FromContext(r.Context()).Info("notice batch refused", "platform", p.ID, "notices", len(batch.Notices), "code", firstErr.Code)
		httpapi.WriteError(w, firstErr)
		return
	}

	failed := false
	for _, v := range valid {
		res := &results[v.index]
		if failed { // the integrator is not taking notices: the platform sends them again
			res.Status = "skipped"
			continue
		}
		status, herr := t.deliverNotice(r.Context(), p, target, v, now)
		if herr != nil {
			if herr.Code == httpapi.CodeReplayStoreUnavailable {
				httpapi.WriteError(w, herr)
				return
			}
			res.Status, res.Error, failed = "failed", herr.Code, true
			noticesTotal.WithLabelValues("failed").Inc()
			log.FromContext(r.Context()).Info("notice not delivered: the platform is told to retry",
				"platform", p.ID, "noticeType", v.notice.Type, "code", herr.Code, "error", errString(herr.Cause))
			continue
		}
		res.Status = status
		noticesTotal.WithLabelValues(status).Inc()
	}
	if failed { // T-PNS-07
		w.Header().Set("Retry-After", strconv.Itoa(noticeRetryAfterSeconds))
		httpapi.WriteError(w, httpapi.Errorf(http.StatusServiceUnavailable, CodeNoticeDeliveryFailed,
			"The integrator's webhook did not take a notice; send the batch again later."))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"notices": results})
}

// deliverNotice sends one valid notice unless it was delivered before, and records it once
// the webhook took it. Two replicas given the same notice at once may both deliver it
// before either records it; the webhook-id is the same, so the integrator can drop the
// second (docs/notices.md, "Exactly once?").
func (t *Tool) deliverNotice(ctx context.Context, p *registry.Platform, target string, v validNotice, now time.Time) (string, *httpapi.Error) {
	key := "notice:" + string(p.UID) + "\x00" + v.notice.ID
	if seen, err := replay.Seen(ctx, t.replay, key, now); err != nil {
		return "", httpapi.ReplayStoreUnavailable(err)
	} else if seen { // T-PNS-06
		return "duplicate", nil
	}
	body, err := t.noticeEvent(p, v, now)
	if err != nil {
		return "", sessions.ErrSealingNotReady
	}
	if err := t.opts.Notices.Webhook.Deliver(ctx, target, webhookID(p, v.notice.ID), body); err != nil {
		return "", &httpapi.Error{Status: http.StatusServiceUnavailable, Code: CodeNoticeDeliveryFailed,
			Description: "The webhook did not take the notice.", Cause: err}
	}
	// Kept while the notice's JWT is valid, and at least an hour: a platform that retries
	// signs the notice again.
	until := time.Unix(v.claims.ExpiresAt, 0).Add(max(t.opts.ClockSkew, 0))
	if floor := now.Add(noticeReplayMinimumWindow); until.Before(floor) {
		until = floor
	}
	if _, err := t.replay.Use(ctx, key, until, now); err != nil {
		return "", httpapi.ReplayStoreUnavailable(err)
	}
	return "delivered", nil
}

// noticeWebhookURL is the registration's own webhook, else the configured one.
func (t *Tool) noticeWebhookURL(p *registry.Platform) string {
	if u := string(p.Spec.NoticeWebhookURL); u != "" {
		return u
	}
	return t.opts.Notices.WebhookURL
}

// webhookID is the webhook-id of a notice: the same for every delivery of it, so that the
// integrator can drop a duplicate (Standard Webhooks idempotency).
func webhookID(p *registry.Platform, noticeID string) string {
	sum := sha256.Sum256([]byte(string(p.UID) + "\x00" + noticeID))
	return "msg_" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// noticeEvent is the webhook body: the notice in a simplified form, the notice key, and the
// platform's claims as received.
type noticeEvent struct {
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	Data      noticeData `json:"data"`
}

type noticeData struct {
	Notice             noticeInfo      `json:"notice"`
	Platform           noticePlatform  `json:"platform"`
	Context            *noticeContext  `json:"context,omitempty"`
	NoticeKey          string          `json:"noticeKey"`
	NoticeKeyExpiresAt string          `json:"noticeKeyExpiresAt"`
	Claims             json.RawMessage `json:"claims"`
}

type noticeInfo struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
}

type noticePlatform struct {
	ID           string `json:"id"`
	URL          string `json:"url"`
	ClientID     string `json:"clientId"`
	DeploymentID string `json:"deploymentId"`
	Name         string `json:"name"`
}

type noticeContext struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	Title string `json:"title,omitempty"`
}

func (t *Tool) noticeEvent(p *registry.Platform, v validNotice, now time.Time) ([]byte, error) {
	key, expires, err := t.auth.noticeKey(p, v.claims)
	if err != nil {
		return nil, err
	}
	ev := noticeEvent{Type: noticeEventType, Timestamp: now.UTC().Format(time.RFC3339), Data: noticeData{
		Notice: noticeInfo{ID: v.notice.ID, Type: v.notice.Type, Timestamp: v.notice.Timestamp},
		Platform: noticePlatform{ID: p.ID, URL: string(p.Spec.URL), ClientID: p.Spec.ClientID,
			DeploymentID: v.claims.DeploymentID, Name: p.Spec.Name},
		NoticeKey: key, NoticeKeyExpiresAt: expires.UTC().Format(time.RFC3339), Claims: v.claims.Raw,
	}}
	if c := v.claims.Context; c != nil {
		ev.Data.Context = &noticeContext{ID: c.ID, Label: c.Label, Title: c.Title}
	}
	return json.Marshal(ev)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
