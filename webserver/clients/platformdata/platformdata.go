// Package platformdata calls the integrator's platform data API: the few JSON calls that
// feed the Names and Role Provisioning and Assignment and Grade Services ltiop serves to
// tools in platform mode (docs/platform-mode.md, "The platform data API").
//
// Every call is a POST of one JSON object to <base>/<operation path>, signed the Standard
// Webhooks way with the notice webhook's secret (package webhook): the body names the
// operation, the tool, the deployment and the context, so a signed request means exactly
// one thing. The integrator's answers are mapped to what the tool is told: 404 stays 404,
// 400/422 become 400, 403 and 409 stay, anything else (5xx, a timeout, an unreadable
// answer) is 502 with nothing written by ltiop.
package platformdata

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Operations: the "operation" member of each call and the path it is posted to.
const (
	OpMemberships    = "memberships.list"
	OpLineItems      = "lineitems.list"
	OpCreateLineItem = "lineitems.create"
	OpGetLineItem    = "lineitems.get"
	OpUpdateLineItem = "lineitems.update"
	OpDeleteLineItem = "lineitems.delete"
	OpScore          = "scores.post"
	OpResults        = "results.list"
)

// paths are the operations' paths under the base URL.
var paths = map[string]string{
	OpMemberships: "/memberships", OpLineItems: "/lineitems/list", OpCreateLineItem: "/lineitems/create",
	OpGetLineItem: "/lineitems/get", OpUpdateLineItem: "/lineitems/update", OpDeleteLineItem: "/lineitems/delete",
	OpScore: "/scores", OpResults: "/results",
}

// Path returns the path of op under the base URL.
func Path(op string) string { return paths[op] }

// Stable codes of the answers to tools that come from the data API.
const (
	// CodeUnavailable: the integrator answered 5xx, did not answer in time, or answered
	// something unreadable; nothing was written by ltiop and the tool may retry.
	CodeUnavailable = "PLATFORM_DATA_UNAVAILABLE"
	// CodeNotConfigured: no platformDataUrl (or no webhook secret to sign with).
	CodeNotConfigured = "PLATFORM_DATA_NOT_CONFIGURED"
	// CodeRefused: the integrator refused the request as invalid (400 or 422).
	CodeRefused = "REQUEST_REFUSED"
	// CodeForbidden: the integrator refused the request (403).
	CodeForbidden = "FORBIDDEN"
)

// MaxAnswerBytes bounds an answer of the integrator (a page of 1,000 members fits).
const MaxAnswerBytes = 4 << 20

// RetryAfterSeconds is the Retry-After of a 502: the tool may try again.
const RetryAfterSeconds = 5

// Tool names the tool a call is made for.
type Tool struct {
	ID           string `json:"id"`
	ClientID     string `json:"clientId"`
	DeploymentID string `json:"deploymentId"`
}

// Request is the body of every call; the members an operation does not use are omitted.
type Request struct {
	Operation      string              `json:"operation"`
	Tool           Tool                `json:"tool"`
	ContextID      string              `json:"contextId"`
	LineItemID     string              `json:"lineItemId,omitempty"`
	Role           string              `json:"role,omitempty"`
	ResourceLinkID string              `json:"resourceLinkId,omitempty"`
	ResourceID     string              `json:"resourceId,omitempty"`
	Tag            string              `json:"tag,omitempty"`
	UserID         string              `json:"userId,omitempty"`
	Limit          int                 `json:"limit,omitempty"`
	Cursor         string              `json:"cursor,omitempty"`
	LineItem       *advantage.LineItem `json:"lineItem,omitempty"`
	Score          *advantage.Score    `json:"score,omitempty"`
}

// Context is the course the members belong to.
type Context struct {
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
	Title string `json:"title,omitempty"`
}

// MembersPage is the answer of memberships.list: the contract's members (§2.4).
type MembersPage struct {
	Context *Context           `json:"context,omitempty"`
	Members []advantage.Member `json:"members"`
	// Next is the integrator's cursor of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// LineItemsPage is the answer of lineitems.list.
type LineItemsPage struct {
	LineItems []advantage.LineItem `json:"lineItems"`
	Next      string               `json:"next,omitempty"`
}

// Result is one user's current grade on a line item.
type Result struct {
	UserID        string   `json:"userId"`
	ResultScore   *float64 `json:"resultScore,omitempty"`
	ResultMaximum *float64 `json:"resultMaximum,omitempty"`
	Comment       string   `json:"comment,omitempty"`
	ScoringUserID string   `json:"scoringUserId,omitempty"`
	Timestamp     string   `json:"timestamp,omitempty"`
}

// ResultsPage is the answer of results.list.
type ResultsPage struct {
	Results []Result `json:"results"`
	Next    string   `json:"next,omitempty"`
}

// Client calls the data API.
type Client struct {
	// Sender signs and posts (the notice webhook's sender: its secret and outbound policy).
	Sender *webhook.Sender
}

// Call posts req to base and decodes a 2xx answer into out (nil: the answer is ignored).
// A refusal is an *httpapi.Error ready for the tool.
func (c *Client) Call(ctx context.Context, base string, req *Request, out any) *httpapi.Error {
	if base == "" || c == nil || c.Sender == nil {
		return notConfigured()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The data API request could not be encoded.")
	}
	target := strings.TrimSuffix(base, "/") + paths[req.Operation]
	status, answer, err := c.Sender.Call(ctx, outbound.TargetPlatformData, target, "msg_"+httpapi.RandomToken(16), body, MaxAnswerBytes)
	switch {
	case errors.Is(err, webhook.ErrNoSecret):
		return notConfigured()
	case err != nil:
		return unavailable("The platform's data API could not be reached or did not answer in time.", err)
	}
	if status >= 200 && status <= 299 {
		if out == nil {
			return nil
		}
		if page, ok := out.(*MembersPage); ok { // the roster: a fast path for its plain shape
			if decodeMembersPage(answer, page) {
				return nil
			}
			*page = MembersPage{}
		}
		if err := json.Unmarshal(answer, out); err != nil {
			return unavailable("The platform's data API answered something that is not the expected JSON.", err)
		}
		return nil
	}
	return mapStatus(status, answer)
}

// mapStatus turns the integrator's refusal into the tool's answer.
func mapStatus(status int, answer []byte) *httpapi.Error {
	desc := integratorDescription(answer)
	switch status {
	case http.StatusNotFound:
		return httpapi.Errorf(http.StatusNotFound, httpapi.CodeNotFound, orDefault(desc, "Not found."))
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return httpapi.Errorf(http.StatusBadRequest, CodeRefused, orDefault(desc, "The platform refused the request."))
	case http.StatusForbidden:
		return httpapi.Errorf(http.StatusForbidden, CodeForbidden, orDefault(desc, "The platform refused the request."))
	case http.StatusConflict:
		return httpapi.Errorf(http.StatusConflict, httpapi.CodeConflict, orDefault(desc, "The request conflicts with the platform's state."))
	}
	return unavailable("The platform's data API answered HTTP "+strconv.Itoa(status)+".", nil)
}

// integratorDescription is details.description of an error envelope the integrator
// answered with, when it is short plain text: it is passed on to the tool.
func integratorDescription(answer []byte) string {
	var env httpapi.Envelope
	if json.Unmarshal(answer, &env) != nil {
		return ""
	}
	d := env.Details.Description
	if len(d) > 512 || !utf8.ValidString(d) || strings.ContainsAny(d, "\r\n") {
		return ""
	}
	return d
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func notConfigured() *httpapi.Error {
	return httpapi.Errorf(http.StatusServiceUnavailable, CodeNotConfigured,
		"This platform serves no Names and Roles or Assignment and Grades data (no platformDataUrl or webhook secret).")
}

func unavailable(desc string, cause error) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadGateway, Code: CodeUnavailable, Description: desc + " Nothing was written; try again.", Cause: cause}
}
