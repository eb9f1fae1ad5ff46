package advantage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ltiop/ltiop/api/ltiwire"
)

// maxPNSBody bounds a notice catalog: a handful of handlers per deployment.
const maxPNSBody = 256 << 10

// NoticeHandler is one entry of a deployment's notice catalog: where the platform sends
// one notice type. An empty Handler means none is registered.
type NoticeHandler struct {
	NoticeType   string `json:"notice_type"`
	Handler      string `json:"handler"`
	MaxBatchSize *int   `json:"max_batch_size,omitempty"`
}

// NoticeCatalog is the platform's answer to GET on its notice-handler endpoint. client_id
// is not read: Canvas sends it as a number, the spec as a string.
type NoticeCatalog struct {
	DeploymentID string          `json:"deployment_id"`
	Handlers     []NoticeHandler `json:"notice_handlers"`
}

// NoticeHandlers reads the deployment's notice catalog from the platform's
// platform_notification_service_url (a URL from the signed launch).
func (c *Client) NoticeHandlers(ctx context.Context, cred Credentials, pnsURL string) (*NoticeCatalog, error) {
	const op = "noticehandlers"
	if _, err := parseHTTPURL(pnsURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: notice service URL: %w", op, err)
	}
	scopes := []string{ltiwire.ScopeNoticeHandlers}
	body, res, err := c.get(ctx, cred, op, scopes, scopes, pnsURL, "application/json", maxPNSBody) //nolint:bodyclose // get closes the body
	if err != nil {
		return nil, err
	}
	var cat NoticeCatalog
	if err := json.Unmarshal(body, &cat); err != nil {
		return nil, badResponse(op, res, body, err)
	}
	return &cat, nil
}

// SetNoticeHandler registers h (or, with an empty Handler, removes the registration of its
// notice type) with PUT on the platform's notice-handler endpoint.
func (c *Client) SetNoticeHandler(ctx context.Context, cred Credentials, pnsURL string, h NoticeHandler) (*NoticeHandler, error) {
	const op = "noticehandlers"
	if _, err := parseHTTPURL(pnsURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: notice service URL: %w", op, err)
	}
	payload, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	scopes := []string{ltiwire.ScopeNoticeHandlers}
	res, err := c.do(ctx, cred, op, scopes, scopes, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, pnsURL, bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := readBody(op, res, maxPNSBody)
	if err != nil {
		return nil, err
	}
	out := h
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, badResponse(op, res, body, err)
		}
	}
	return &out, nil
}
