package advantage

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
)

// Limits of outbound calls.
const (
	// DefaultTimeout bounds every outbound exchange (token request, service call) when the
	// HTTP client has no Timeout of its own.
	DefaultTimeout = 10 * time.Second

	maxTokenBody   = 64 << 10 // token endpoint response
	maxAGSBody     = 2 << 20  // line items, results
	maxNRPSBody    = 16 << 20 // one membership page
	maxGroupsBody  = 4 << 20  // one page of groups or group sets
	maxErrorBody   = 16 << 10 // what is read of a failed response, for its ErrorExcerpt
	maxRedirects   = 5
	drainOnDiscard = 64 << 10 // read this much of a discarded body so the connection can be reused
)

// ErrForeignURL means a paging link, an item id or a redirect points away from the host
// the caller expected. The token would have been sent there; nothing was (T-NRPS-03).
var ErrForeignURL = errors.New("URL is not on the expected LMS host")

// ErrScopeNotGranted means the launch, or the platform's token endpoint, did not grant the
// scope the call needs (T-AGS-02, T-CC-08). No request was sent to the service.
var ErrScopeNotGranted = errors.New("scope not granted")

// UpstreamError is an LMS failure: a non-2xx answer (Status, and Body, its error fields),
// no answer in time (Timeout), no answer at all (Status 0, Err), or an answer ltiop cannot
// use (Status with Err). The token endpoint's RFC 6749 error is one too, with Code set.
type UpstreamError struct {
	Op      string // what was being done: "token", "memberships", "lineitems", "score", …
	Status  int    // the LMS's HTTP status; 0 when it did not answer
	Body    string // the JSON error fields of the LMS's answer (outbound.ErrorExcerpt), never more
	Timeout bool   // the LMS did not answer in time
	Code    string // the token endpoint's RFC 6749 "error" (invalid_scope, invalid_client, …)
	Err     error  // the underlying cause, when there is one
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	b.WriteString("advantage: ")
	b.WriteString(e.Op)
	switch {
	case e.Timeout:
		b.WriteString(": the LMS did not answer in time")
	case e.Status != 0:
		b.WriteString(": the LMS answered HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
		if e.Code != "" {
			b.WriteString(" (")
			b.WriteString(e.Code)
			b.WriteString(")")
		}
	default:
		b.WriteString(": the LMS could not be reached")
	}
	if e.Err != nil && !e.Timeout {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// Client calls LMS services on behalf of any number of registrations. It is safe for
// concurrent use; make one and share it.
type Client struct {
	hc      outbound.Clients // by the source of the registration's URLs (Credentials.Source)
	timeout time.Duration
	now     func() time.Time

	seed    maphash.Seed
	mu      sync.RWMutex
	tokens  map[uint64]*tokenEntry // by keyHash; collisions chain through tokenEntry.next
	ntokens int

	stamps stamper
}

// ErrURLRefused means the outbound policy refused a URL the platform gave, or a redirect
// it answered with: a loopback, private or cloud metadata address, http where https is
// required, another host for a call carrying a credential. Nothing was sent there.
var ErrURLRefused = errors.New("the outbound policy refused the URL")

// HTTPClient returns the client LTI Advantage calls need under policy p: p enforced on
// every connection (outbound.NewClient), redirects only within the first request's host
// (the token, or the client assertion a 307 re-sends, never leaves it), at most 5 of them.
func HTTPClient(p outbound.Policy) *http.Client {
	p.SameHostRedirects = true
	p.MaxRedirects = maxRedirects
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Target == "" {
		p.Target = outbound.TargetToken
	}
	return outbound.NewClient(p)
}

// NewClient returns a Client sending the requests of the operator's registrations with
// httpClient, which should come from HTTPClient; nil means HTTPClient with the production
// policy (https, public addresses only). Those of dynamic registrations get the production
// policy: see NewClientBySource.
func NewClient(httpClient *http.Client) *Client {
	return NewClientBySource(outbound.Clients{Operator: httpClient})
}

// NewClientBySource returns a Client sending each request with the client of its
// Credentials.Source, each from HTTPClient; a source without one gets HTTPClient with the
// production policy. Whatever the client, redirects to another host are refused. Every
// call also gets a context timeout: the operator's client's Timeout when set, else
// DefaultTimeout.
func NewClientBySource(clients outbound.Clients) *Client {
	wrap := func(httpClient *http.Client) *http.Client {
		if httpClient == nil {
			httpClient = HTTPClient(outbound.Policy{})
		}
		hc := *httpClient
		hc.CheckRedirect = sameHostRedirects(httpClient.CheckRedirect)
		return &hc
	}
	hc := outbound.Clients{Operator: wrap(clients.Operator), DynamicRegistration: wrap(clients.DynamicRegistration)}
	timeout := DefaultTimeout
	if hc.Operator.Timeout > 0 {
		timeout = hc.Operator.Timeout
	}
	return &Client{
		hc:      hc,
		timeout: timeout,
		now:     time.Now,
		seed:    maphash.MakeSeed(),
		tokens:  map[uint64]*tokenEntry{},
		stamps:  stamper{last: map[string]int64{}},
	}
}

// sameHostRedirects runs the client's own redirect check (the outbound policy's), then
// refuses any redirect off the original host, whatever the client: a redirect elsewhere
// would carry the token (or, for 307/308, the client assertion) there.
func sameHostRedirects(base func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if base != nil {
			if err := base(req, via); err != nil {
				return err
			}
		} else if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !SameHost(via[0].URL.String(), req.URL.String()) {
			return fmt.Errorf("redirect to %s: %w", req.URL.Host, ErrForeignURL)
		}
		return nil
	}
}

// Do sends the request build makes, with "Authorization: Bearer <token>" for scopes, and
// returns the response when its status is 2xx (the caller closes its body). On 401 it
// drops that token from the cache and tries once more with a fresh one (T-CC-09); any
// other non-2xx answer, and a second 401, is an *UpstreamError. build is called once per
// attempt with a context bounded by the client's timeout, and must use it; the request it
// builds must go to a URL the caller trusts with the token.
func (c *Client) Do(ctx context.Context, cred Credentials, scopes []string, build func(ctx context.Context) (*http.Request, error)) (*http.Response, error) {
	return c.do(ctx, cred, "request", scopes, nil, build)
}

// do is Do with the operation's name for errors and, when need is not empty, the scopes
// (any one of them) the token must have been granted.
func (c *Client) do(ctx context.Context, cred Credentials, op string, scopes, need []string, build func(ctx context.Context) (*http.Request, error)) (*http.Response, error) {
	res, cancel, err := c.exchange(ctx, cred, op, scopes, need, func(rctx context.Context, token string) (*http.Response, error) {
		req, err := build(rctx)
		if err != nil {
			return nil, fmt.Errorf("advantage: %s: %w", op, err)
		}
		if req.Context() != rctx {
			req = req.WithContext(rctx)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if req.Header.Get("User-Agent") == "" {
			req.Header.Set("User-Agent", version.UserAgent())
		}
		res, err := c.hc.For(cred.Source).Do(req)
		if err != nil {
			return nil, transportError(op, err)
		}
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// exchange is the token loop of every service call: it gets a token for scopes (checking,
// when need is not empty, that it was granted one of them), and calls send with it and a
// context bounded by the client's timeout. On 401 it drops that token from the cache and
// tries once more with a fresh one (T-CC-09); any other non-2xx answer, and a second 401,
// is an *UpstreamError. It returns a 2xx response and the cancel of its context, which the
// caller calls once done with the body; send's errors come back as they are.
func (c *Client) exchange(ctx context.Context, cred Credentials, op string, scopes, need []string,
	send func(ctx context.Context, token string) (*http.Response, error)) (*http.Response, context.CancelFunc, error) {
	for attempt := 0; ; attempt++ {
		tok, entry, err := c.token(ctx, cred, scopes)
		if err != nil {
			return nil, nil, err
		}
		if len(need) > 0 && !grantedAny(tok.granted, need) {
			return nil, nil, fmt.Errorf("advantage: %s: the platform's token does not carry %s: %w", op, strings.Join(need, " or "), ErrScopeNotGranted)
		}
		rctx, cancel := context.WithTimeout(outbound.WithTarget(ctx, targetOf(op)), c.timeout)
		res, err := send(rctx, tok.value)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		if res.StatusCode == http.StatusUnauthorized && attempt == 0 {
			discard(res.Body)
			cancel()
			entry.cur.CompareAndSwap(tok, nil) // revoked or expired early: fetch a fresh one
			continue
		}
		if res.StatusCode < 200 || res.StatusCode > 299 {
			body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			discard(res.Body)
			cancel()
			return nil, nil, &UpstreamError{Op: op, Status: res.StatusCode, Body: outbound.ErrorExcerpt(body)}
		}
		return res, cancel, nil
	}
}

// cancelOnClose releases the request's timeout context when the body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func discard(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, drainOnDiscard)
	_ = body.Close()
}

// readBody reads at most limit bytes of a 2xx response; more is an UpstreamError.
func readBody(op string, res *http.Response, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, transportError(op, err)
	}
	if int64(len(body)) > limit {
		return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: fmt.Errorf("response larger than %d bytes", limit)}
	}
	return body, nil
}

// targetOf is the metrics label of an operation's calls.
func targetOf(op string) string {
	switch op {
	case "memberships":
		return outbound.TargetNRPS
	case opGroups, opGroupSets:
		return outbound.TargetGroups
	case "request", opAsset:
		return outbound.TargetOther
	case "noticehandlers":
		return outbound.TargetPNS
	}
	return outbound.TargetAGS
}

// transportError classifies a failed exchange: the caller giving up is its own error;
// a redirect away from the host is ErrForeignURL; a URL the outbound policy refuses is
// ErrURLRefused; everything else is the LMS's failure, a timeout when a deadline passed.
// URLs in the error lose their query (a token may ride there).
func transportError(op string, err error) error {
	err = outbound.Redact(err)
	var oe *outbound.Error
	switch {
	case errors.Is(err, ErrForeignURL):
		return fmt.Errorf("advantage: %s: %w", op, err)
	case errors.As(err, &oe):
		return fmt.Errorf("advantage: %s: %w: %w", op, ErrURLRefused, oe)
	}
	var ne net.Error
	timeout := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	if !timeout && errors.Is(err, context.Canceled) {
		return fmt.Errorf("advantage: %s: %w", op, err)
	}
	return &UpstreamError{Op: op, Timeout: timeout, Err: err}
}

// badResponse is an UpstreamError for a 2xx answer ltiop cannot use.
func badResponse(op string, res *http.Response, body []byte, err error) error {
	return &UpstreamError{Op: op, Status: res.StatusCode, Body: outbound.ErrorExcerpt(body), Err: err}
}
