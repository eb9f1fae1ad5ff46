package toolsim

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// ServiceAnswer is a platform service's answer to the tool.
type ServiceAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// CallService calls a platform's NRPS or AGS endpoint as a tool does: method on target with
// Authorization: Bearer accessToken, Accept accept (when not empty), and body sent as
// contentType (when body is not nil).
func (t *Tool) CallService(ctx context.Context, method, target, accessToken, accept, contentType string, body []byte) (ServiceAnswer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return ServiceAnswer{}, err
	}
	if accessToken != "" {
		req.Header.Set("Authorization", "Bearer "+accessToken)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := t.httpClient(t.Config()).Do(req)
	if err != nil {
		return ServiceAnswer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	return ServiceAnswer{Status: res.StatusCode, Header: res.Header, Body: b}, err
}
