// Package stdwebhook is the receiving side of Standard Webhooks
// (https://www.standardwebhooks.com), as an integrator's verifier library does it: decode
// the whsec_ secret, check the webhook-signature of a message and its timestamp. It is
// written from the convention, not from ltiop's sender, so that a simulator that verifies
// with it checks ltiop's signatures independently.
package stdwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a message's timestamp may be from now (the convention's five minutes).
const Tolerance = 5 * time.Minute

// ParseSecret decodes a "whsec_<base64>" secret into the HMAC key.
func ParseSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("stdwebhook: the secret is not whsec_ followed by base64")
	}
	return key, nil
}

// Signature is the webhook-signature value of a message: "v1," and the base64
// HMAC-SHA256, keyed by key, of "id.timestamp.body".
func Signature(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received message: an id, a timestamp within Tolerance of now, and one of
// the space-separated signatures made with key.
func Verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("stdwebhook: no webhook-id or webhook-timestamp")
	}
	if age := now.Sub(time.Unix(sec, 0)); age > Tolerance || age < -Tolerance {
		return errors.New("stdwebhook: the timestamp is too far from now")
	}
	want := []byte(Signature(key, id, ts, body))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("stdwebhook: no signature matches")
}
