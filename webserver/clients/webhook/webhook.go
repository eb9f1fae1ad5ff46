// Package webhook delivers events to the integrator as Standard Webhooks
// (https://www.standardwebhooks.com): a JSON POST carrying webhook-id, webhook-timestamp
// and webhook-signature, the signature an HMAC-SHA256 of "id.timestamp.body" keyed by the
// integrator's shared secret, so that any Standard Webhooks verifier library accepts it.
//
// The package signs, verifies and sends; what an event holds is its caller's.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ltiop/ltiop/internal/outbound"
)

// Header names of the Standard Webhooks convention.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts a Standard Webhooks secret; the rest is base64.
const SecretPrefix = "whsec_"

// MinSecretBytes is the shortest decoded secret accepted (the convention asks for 24 to 64).
const MinSecretBytes = 24

// ParseSecret decodes a "whsec_<base64>" secret (the prefix is optional) into the HMAC key.
func ParseSecret(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("webhook: the secret is not whsec_ followed by base64")
	}
	if len(key) < MinSecretBytes {
		return nil, fmt.Errorf("webhook: the secret decodes to %d bytes; at least %d are needed", len(key), MinSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature value of a message: "v1," and the base64 HMAC-SHA256,
// keyed by key, of id, the timestamp in unix seconds and the body, joined by full stops.
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received message as an integrator's verifier does: one of the
// space-separated signatures matches, and the timestamp is within tolerance of now.
func Verify(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts := h.Get(HeaderID), h.Get(HeaderTimestamp)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("webhook: missing id or timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	want := Sign(key, id, sec, body)
	for _, sig := range strings.Fields(h.Get(HeaderSignature)) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: no matching signature")
}

// Key supplies the current signing key, or nil when none is configured.
type Key func() []byte

// Sender posts signed messages. Its client should enforce the outbound policy
// (outbound.NewClient with the webhook target).
type Sender struct {
	Client *http.Client
	Key    Key
	// Now is the clock of webhook-timestamp (nil: time.Now).
	Now func() time.Time
}

// ErrNoSecret means no webhook secret is configured: nothing was sent.
var ErrNoSecret = errors.New("webhook: no signing secret is configured")

// maxAnswer is how much of the integrator's answer is read (and then ignored).
const maxAnswer = 4 << 10

// StatusError is a non-2xx answer of the integrator.
type StatusError struct{ Status int }

func (e *StatusError) Error() string {
	return "webhook: the integrator answered " + strconv.Itoa(e.Status)
}

// Deliver posts body (JSON) to url as message id, signed, and returns nil only when the
// integrator answered 2xx. Redirects are not followed: a webhook answers where it is.
func (s *Sender) Deliver(ctx context.Context, url, id string, body []byte) error {
	status, _, err := s.send(ctx, outbound.TargetWebhook, url, id, body, 0)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return &StatusError{Status: status}
	}
	return nil
}

// Call posts body (JSON) to url as message id, signed as Deliver signs, and returns the
// integrator's status and its answer, of which at most limit bytes are read (a longer
// answer is ErrAnswerTooLarge). target labels the outbound metrics. Redirects are not
// followed.
func (s *Sender) Call(ctx context.Context, target, url, id string, body []byte, limit int64) (int, []byte, error) {
	return s.send(ctx, target, url, id, body, limit)
}

// ErrAnswerTooLarge means the integrator's answer was longer than the caller reads.
var ErrAnswerTooLarge = errors.New("webhook: the answer is too large")

// send signs and posts body; with limit 0 the answer is read up to maxAnswer and dropped.
func (s *Sender) send(ctx context.Context, target, url, id string, body []byte, limit int64) (int, []byte, error) {
	key := s.Key()
	if len(key) == 0 {
		return 0, nil, ErrNoSecret
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ts := now().Unix()
	req, err := http.NewRequestWithContext(outbound.WithTarget(ctx, target), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(key, id, ts, body))
	res, err := s.Client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("webhook: %w", outbound.Redact(err))
	}
	defer res.Body.Close()
	if limit <= 0 {
		_, _ = io.CopyN(io.Discard, res.Body, maxAnswer)
		return res.StatusCode, nil, nil
	}
	answer, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return res.StatusCode, nil, fmt.Errorf("webhook: reading the answer: %w", outbound.Redact(err))
	}
	if int64(len(answer)) > limit {
		return res.StatusCode, nil, ErrAnswerTooLarge
	}
	return res.StatusCode, answer, nil
}

// DefaultTimeout bounds one delivery when the policy names no timeout.
const DefaultTimeout = 10 * time.Second

// NewClient returns the HTTP client of deliveries under policy p: p's address rules,
// counted under the webhook target, no redirects, DefaultTimeout unless p names one.
func NewClient(p outbound.Policy) *http.Client {
	p.Target = outbound.TargetWebhook
	p.MaxRedirects = -1
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	return outbound.NewClient(p)
}
