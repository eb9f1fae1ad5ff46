package advantage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ltiop/ltiop/internal/version"
)

// opAsset names asset downloads in errors; their calls count as TargetOther.
const opAsset = "asset"

// ErrAssetTooLarge means the asset is larger than the caller's limit: announced so by the
// platform (nothing was streamed), or found so while streaming (the stream stops there).
var ErrAssetTooLarge = errors.New("asset larger than the limit")

// AssetDownload is an asset being streamed from the platform's Asset Service. The caller
// reads and closes Body; a read past the limit fails with ErrAssetTooLarge.
type AssetDownload struct {
	Body               io.ReadCloser
	ContentType        string
	ContentDisposition string
	Length             int64 // -1 when the platform did not say
}

// DownloadAsset streams the asset at assetURL (from the assetservice claim) with a token
// for scope (the platform's spelling of asset.readonly). The token is sent to assetURL's
// host only: a redirect on that host is followed with it, a redirect elsewhere (Canvas
// answers with its file store) without it, and every hop goes through the outbound policy.
// An asset larger than maxBytes is refused before its body is read when the platform
// announces its length, and cut off with ErrAssetTooLarge otherwise.
func (c *Client) DownloadAsset(ctx context.Context, cred Credentials, assetURL, scope string, maxBytes int64) (*AssetDownload, error) {
	const op = opAsset
	if _, err := parseHTTPURL(assetURL); err != nil {
		return nil, fmt.Errorf("advantage: %s: %w: %w", op, err, ErrForeignURL)
	}
	hc := *c.hc.For(cred.Source)
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	scopes := []string{scope}
	res, cancel, err := c.exchange(ctx, cred, op, scopes, scopes, func(rctx context.Context, token string) (*http.Response, error) {
		return c.follow(rctx, &hc, op, assetURL, token)
	})
	if err != nil {
		return nil, err
	}
	if res.ContentLength > maxBytes {
		_ = res.Body.Close() // not drained: the connection is dropped rather than read for nothing
		cancel()
		return nil, fmt.Errorf("advantage: %s: the platform announces %d bytes, more than %d: %w", op, res.ContentLength, maxBytes, ErrAssetTooLarge)
	}
	return &AssetDownload{
		Body:               &limitedBody{r: res.Body, left: maxBytes, cancel: cancel},
		ContentType:        res.Header.Get("Content-Type"),
		ContentDisposition: res.Header.Get("Content-Disposition"),
		Length:             res.ContentLength,
	}, nil
}

// follow GETs target, following at most maxRedirects redirects by hand: the token goes
// only to the first URL's host.
func (c *Client) follow(ctx context.Context, hc *http.Client, op, target, token string) (*http.Response, error) {
	first := target
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, fmt.Errorf("advantage: %s: %w", op, err)
		}
		if SameHost(first, target) {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("User-Agent", version.UserAgent())
		res, err := hc.Do(req)
		if err != nil {
			return nil, transportError(op, err)
		}
		loc := res.Header.Get("Location")
		if res.StatusCode < 300 || res.StatusCode > 399 || loc == "" {
			return res, nil
		}
		discard(res.Body)
		if hop >= maxRedirects {
			return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: fmt.Errorf("more than %d redirects", maxRedirects)}
		}
		next, err := res.Request.URL.Parse(loc)
		if err != nil || (next.Scheme != "https" && next.Scheme != "http") {
			return nil, &UpstreamError{Op: op, Status: res.StatusCode, Err: errors.New("unusable redirect")}
		}
		if res.Request.URL.Scheme == "https" && next.Scheme != "https" {
			return nil, fmt.Errorf("advantage: %s: redirect from https to http: %w", op, ErrURLRefused)
		}
		target = next.String()
	}
}

// limitedBody stops a stream at its limit with ErrAssetTooLarge, and releases the
// request's timeout when closed.
type limitedBody struct {
	r      io.ReadCloser
	left   int64
	cancel context.CancelFunc
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a larger one.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, ErrAssetTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.r.Close()
	b.cancel()
	return err
}

// PostReport sends report to the Asset Report Service at reportURL (from the assetreport
// claim) with a token for scope (the platform's spelling of report). It returns the
// platform's answer when it is JSON, else nil.
func (c *Client) PostReport(ctx context.Context, cred Credentials, reportURL, scope string, report *Report) (json.RawMessage, error) {
	payload, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	return c.sendJSON(ctx, cred, "report", http.MethodPost, reportURL, scope, payload)
}

// EulaDeployment is the body of the EULA deployment service.
type EulaDeployment struct {
	EulaRequired bool `json:"eulaRequired"`
}

// EulaAcceptance is the body of the EULA user service.
type EulaAcceptance struct {
	UserID    string `json:"userId"`
	Accepted  bool   `json:"accepted"`
	Timestamp string `json:"timestamp"`
}

// GetEulaDeployment reads {eulaURL}/deployment. The EULA specification defines PUT only;
// a platform that answers GET returns its current requirement.
func (c *Client) GetEulaDeployment(ctx context.Context, cred Credentials, eulaURL, scope string) (json.RawMessage, error) {
	target, err := AppendPath(eulaURL, "/deployment")
	if err != nil {
		return nil, err
	}
	return c.sendJSON(ctx, cred, "eula", http.MethodGet, target, scope, nil)
}

// PutEulaDeployment sets whether the deployment's users must accept the tool's EULA:
// PUT {eulaURL}/deployment.
func (c *Client) PutEulaDeployment(ctx context.Context, cred Credentials, eulaURL, scope string, d EulaDeployment) (json.RawMessage, error) {
	target, err := AppendPath(eulaURL, "/deployment")
	if err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(d)
	return c.sendJSON(ctx, cred, "eula", http.MethodPut, target, scope, payload)
}

// PostEulaAcceptance records a user's answer: POST {eulaURL}/user. An empty Timestamp is
// now.
func (c *Client) PostEulaAcceptance(ctx context.Context, cred Credentials, eulaURL, scope string, a EulaAcceptance) (json.RawMessage, error) {
	target, err := AppendPath(eulaURL, "/user")
	if err != nil {
		return nil, err
	}
	if a.Timestamp == "" {
		a.Timestamp = c.now().UTC().Format(time.RFC3339Nano)
	}
	payload, _ := json.Marshal(a)
	return c.sendJSON(ctx, cred, "eula", http.MethodPost, target, scope, payload)
}

// DeleteEulaAcceptances resets every user's acceptance (Canvas: DELETE {eulaURL}/user).
func (c *Client) DeleteEulaAcceptances(ctx context.Context, cred Credentials, eulaURL, scope string) error {
	target, err := AppendPath(eulaURL, "/user")
	if err != nil {
		return err
	}
	_, err = c.sendJSON(ctx, cred, "eula", http.MethodDelete, target, scope, nil)
	return err
}

// maxAPBody bounds the platform's answer to a report or EULA call.
const maxAPBody = 256 << 10

// sendJSON sends payload (nil: no body) to target with a token for scope, and returns the
// answer when it is a JSON value.
func (c *Client) sendJSON(ctx context.Context, cred Credentials, op, method, target, scope string, payload []byte) (json.RawMessage, error) {
	if _, err := parseHTTPURL(target); err != nil {
		return nil, fmt.Errorf("advantage: %s: %w: %w", op, err, ErrForeignURL)
	}
	need := []string{scope}
	res, err := c.do(ctx, cred, op, need, need, func(ctx context.Context) (*http.Request, error) { //nolint:bodyclose // closed below
		var body io.Reader
		if payload != nil {
			body = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, body)
		if err == nil {
			req.Header.Set("Accept", "application/json")
			if payload != nil {
				req.Header.Set("Content-Type", "application/json")
			}
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	defer discard(res.Body)
	body, err := readBody(op, res, maxAPBody)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 || !json.Valid(body) {
		return nil, nil
	}
	return body, nil
}

// AssetURLOn reports whether raw is an http(s) URL on the host of one of urls (the asset
// URLs of a launch or notice): the pin of a caller-given asset URL.
func AssetURLOn(raw string, urls []string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return false
	}
	for _, s := range urls {
		if SameHost(s, raw) {
			return true
		}
	}
	return false
}
