package apierr

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// Error's text is what logs show of a refusal: the code first, the description, then the
// rule and the cause only when set.
func TestErrorText(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	cases := []struct {
		name string
		err  *Error
		want string
	}{
		{"code and description", &Error{Code: "INVALID_TOKEN", Description: "The id_token is not a JWS."},
			"INVALID_TOKEN: The id_token is not a JWS."},
		{"with a rule", &Error{Code: "TOKEN_EXPIRED", Description: "The id_token has expired.", Rule: "T-TOK-09"},
			"TOKEN_EXPIRED: The id_token has expired. [T-TOK-09]"},
		{"with a cause", &Error{Code: "KEY_SET_UNAVAILABLE", Description: "The key set could not be fetched.", Cause: cause},
			"KEY_SET_UNAVAILABLE: The key set could not be fetched.: dial tcp: connection refused"},
		{"with both", &Error{Code: "KEY_SET_UNAVAILABLE", Description: "d", Rule: "T-KEY-02", Cause: cause},
			"KEY_SET_UNAVAILABLE: d [T-KEY-02]: dial tcp: connection refused"},
		// What is never part of the text: the upstream body and OAuth value go to the
		// response only, and the status is the envelope's.
		{"upstream and status left out", &Error{Status: 502, Code: "UPSTREAM", Description: "d", OAuth: "invalid_client",
			Upstream: &Upstream{Status: 500, Body: "secret page"}}, "UPSTREAM: d"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s: Error() = %q, want %q", c.name, got, c.want)
		}
	}
}

// errors.Is and errors.As see through an Error to its cause, and find an Error wrapped in
// another error: handlers rely on both to choose the answer.
func TestErrorUnwraps(t *testing.T) {
	e := &Error{Code: "NOT_FOUND", Description: "d", Cause: fs.ErrNotExist}
	if !errors.Is(e, fs.ErrNotExist) {
		t.Error("errors.Is does not reach the cause")
	}
	if (&Error{Code: "X"}).Unwrap() != nil {
		t.Error("an Error without a cause unwraps to something")
	}
	var got *Error
	if !errors.As(fmt.Errorf("while launching: %w", e), &got) || got != e {
		t.Error("errors.As does not find a wrapped Error")
	}
}
