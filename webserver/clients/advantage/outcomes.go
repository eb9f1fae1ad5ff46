package advantage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/internal/oauth1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/pox"
	"github.com/ltiop/ltiop/internal/version"
)

// maxPOXBody bounds an LMS's Basic Outcomes answer.
const maxPOXBody = 64 << 10

// OutcomeCall is one LTI 1.1 Basic Outcomes request: where (the launch's
// lis_outcome_service_url), which result (lis_result_sourcedid), and the consumer key and
// secret it is signed with.
type OutcomeCall struct {
	ServiceURL, SourcedID string
	ConsumerKey, Secret   string
	Op                    string // pox.OpReplace, OpRead or OpDelete
	Outcome               pox.Outcome
	SignatureMethod       string // "" is HMAC-SHA1, which every LMS accepts
}

// OutcomeRefused is an LMS answer whose imsx_codeMajor is not success: the LMS understood
// the request and refused it (unknown sourcedid, a closed assignment, an unsupported op).
type OutcomeRefused struct {
	CodeMajor, Description string
}

func (e *OutcomeRefused) Error() string {
	return "advantage: outcomes: the LMS answered " + e.CodeMajor + ": " + e.Description
}

// BasicOutcome sends a Basic Outcomes POX request, signed with OAuth 1.0a and
// oauth_body_hash, through the same outbound policy as every LMS call (SSRF guard, timeout,
// same-host redirects), and returns the LMS's answer when it is success. A refusal is an
// *OutcomeRefused; a failed exchange an *UpstreamError.
func (c *Client) BasicOutcome(ctx context.Context, call OutcomeCall) (*pox.Response, error) {
	const op = "outcomes"
	if _, err := parseHTTPURL(call.ServiceURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: outcome service URL: %w", op, err)
	}
	messageID, err := randomID()
	if err != nil {
		return nil, err
	}
	body, err := pox.Request(call.Op, messageID, call.SourcedID, call.Outcome)
	if err != nil {
		return nil, fmt.Errorf("advantage: %s: %w", op, err)
	}
	nonce, err := randomID()
	if err != nil {
		return nil, err
	}
	method := call.SignatureMethod
	if method == "" {
		method = oauth1.MethodHMACSHA1
	}
	oauth, err := oauth1.Sign(http.MethodPost, call.ServiceURL, nil, call.ConsumerKey, call.Secret, method, nonce,
		strconv.FormatInt(c.now().Unix(), 10), oauth1.BodyHash(body))
	if err != nil {
		return nil, fmt.Errorf("advantage: %s: %w", op, err)
	}
	rctx, cancel := context.WithTimeout(outbound.WithTarget(ctx, outbound.TargetAGS), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, call.ServiceURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("advantage: %s: %w", op, err)
	}
	req.Header.Set("Content-Type", pox.ContentType)
	req.Header.Set("Accept", pox.ContentType)
	req.Header.Set("Authorization", oauth1.Authorization(oauth))
	req.Header.Set("User-Agent", version.UserAgent())
	// LTI 1.1 credentials are the operator's (spec.lti11): dynamic registration writes none.
	res, err := c.hc.For(outbound.SourceOperator).Do(req)
	if err != nil {
		return nil, transportError(op, err)
	}
	defer func() { discard(res.Body) }() // drained and closed
	if res.StatusCode < 200 || res.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Body: outbound.ErrorExcerpt(b)}
	}
	b, err := readBody(op, res, maxPOXBody)
	if err != nil {
		return nil, err
	}
	answer, err := pox.ParseResponse(b)
	if err != nil {
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: err}
	}
	if !answer.Success() {
		return nil, &OutcomeRefused{CodeMajor: answer.CodeMajor, Description: answer.Description}
	}
	return answer, nil
}

// IsOutcomeRefused reports whether err is an LMS's refusal of an outcome.
func IsOutcomeRefused(err error) (*OutcomeRefused, bool) {
	var r *OutcomeRefused
	ok := errors.As(err, &r)
	return r, ok
}

func randomID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
