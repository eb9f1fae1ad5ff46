package stdwebhook

import (
	"net/http"
	"testing"
	"time"
)

// The example of the Standard Webhooks specification: its secret, message and signature.
func TestVerifyTheSpecificationsExample(t *testing.T) {
	key, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"test": 2432232314}`)
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,bm9ldHUjKzFob2VudXRob2VodWUzMjRvdWVvdW9ldQo= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	at := time.Unix(1614265330, 0)
	if err := Verify(key, h, body, at); err != nil {
		t.Fatalf("the specification's example: %v", err)
	}
	for name, tc := range map[string]struct {
		body []byte
		at   time.Time
		edit func(http.Header)
	}{
		"another body":    {body: []byte(`{"test": 2432232315}`), at: at},
		"too old":         {body: body, at: at.Add(Tolerance + time.Second)},
		"from the future": {body: body, at: at.Add(-Tolerance - time.Second)},
		"another id":      {body: body, at: at, edit: func(h http.Header) { h.Set("webhook-id", "msg_other") }},
		"no id":           {body: body, at: at, edit: func(h http.Header) { h.Del("webhook-id") }},
		"no signature":    {body: body, at: at, edit: func(h http.Header) { h.Del("webhook-signature") }},
	} {
		h := h.Clone()
		if tc.edit != nil {
			tc.edit(h)
		}
		if Verify(key, h, tc.body, tc.at) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseSecret("whsec_not base64!"); err == nil {
		t.Error("a secret that is not base64 was accepted")
	}
}
