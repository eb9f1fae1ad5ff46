// Package platformcheck checks, on demand, that what a registration names answers: the
// LMS's key set (fetched and parsed as a launch would), its authentication endpoint and
// its token endpoint. Every call goes through the outbound guard, and the answer names
// a stable reason, never what the other host sent.
package platformcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// Stable reasons of a Probe.
const (
	ReasonOK           = "OK"
	ReasonStaticKey    = "StaticKey"     // the registration holds the key: nothing to fetch
	ReasonNotFound     = "NotFound"      // HTTP 404
	ReasonHTTPError    = "HTTPError"     // another non-success status (5xx; for a key set, any but 200)
	ReasonTLSError     = "TLSError"      // the certificate or the TLS handshake failed
	ReasonTimeout      = "Timeout"       // no answer in time
	ReasonDNSError     = "DNSError"      // the host name does not resolve
	ReasonUnreachable  = "Unreachable"   // the connection was refused or reset
	ReasonNotAllowed   = "NotAllowed"    // the outbound policy refuses the address (SSRF guard)
	ReasonInvalidSet   = "InvalidKeySet" // the answer is not a JSON Web Key Set
	ReasonNoRSAKey     = "NoRSAKey"      // the set holds no usable RS256 signing key
	ReasonInvalidURL   = "InvalidURL"
	ReasonFailed       = "Failed" // anything else
	probeTimeout       = 5 * time.Second
	maxEndpointReadLen = 4 << 10
)

// Probe is the outcome of one check.
type Probe struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Result is the answer of POST /api/platforms/{id}/check.
type Result struct {
	KeySet                 Probe `json:"keySet"`
	AuthenticationEndpoint Probe `json:"authenticationEndpoint"`
	AccesstokenEndpoint    Probe `json:"accesstokenEndpoint"`
}

// Checker runs the checks.
type Checker struct {
	// KeySets fetches key sets as launches do (registry.PeerKeys, with its guarded clients).
	KeySets *registry.PeerKeys
	// Clients call the endpoints, each registration's with the client of its source (from
	// outbound.NewClient), so no check reaches inside the network, nor what only another
	// source's allowance opens. A source without one gets the production policy.
	Clients outbound.Clients
}

// Check runs the three checks of p at once and waits for them (each bounded in time).
func (c *Checker) Check(ctx context.Context, p *registry.Platform) Result {
	var res Result
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); res.KeySet = c.keySet(ctx, p.Source, p.Spec.AuthConfig) }()
	go func() {
		defer wg.Done()
		res.AuthenticationEndpoint = c.endpoint(ctx, p.Source, http.MethodGet, string(p.Spec.AuthenticationEndpoint))
	}()
	go func() {
		defer wg.Done()
		res.AccesstokenEndpoint = c.endpoint(ctx, p.Source, http.MethodPost, string(p.Spec.AccesstokenEndpoint))
	}()
	wg.Wait()
	return res
}

func (c *Checker) keySet(ctx context.Context, source outbound.Source, ac ltiv1.AuthConfig) Probe {
	if ac.Method != ltiv1.AuthMethodJWKSet {
		return Probe{OK: true, Reason: ReasonStaticKey, Detail: fmt.Sprintf("The registration holds the platform's key itself (%s): there is no key set to fetch.", ac.Method)}
	}
	n, err := c.KeySets.FetchKeySet(ctx, source, ac.Key)
	switch {
	case errors.Is(err, registry.ErrNotKeySet):
		return Probe{Reason: ReasonInvalidSet, Detail: "The key set URL answered something that is not a JSON Web Key Set."}
	case err != nil:
		return failure("key set URL", err)
	case n == 0:
		return Probe{Reason: ReasonNoRSAKey, Detail: "The key set holds no RSA signing key of at least 2048 bits usable with RS256."}
	}
	return Probe{OK: true, Reason: ReasonOK, Detail: fmt.Sprintf("The key set holds %d usable RSA signing key(s).", n)}
}

// endpoint calls an LMS endpoint without parameters. Any answer but a 404 or a server
// error shows it is there: without a login or a client assertion, a 400 or 401 is right.
func (c *Checker) endpoint(ctx context.Context, source outbound.Source, method, rawURL string) Probe {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return Probe{Reason: ReasonInvalidURL, Detail: "The endpoint is not an absolute URL."}
	}
	ctx, cancel := context.WithTimeout(outbound.WithTarget(ctx, outbound.TargetOther), probeTimeout)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return Probe{Reason: ReasonInvalidURL, Detail: "The endpoint is not a usable URL."}
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", version.UserAgent())
	res, err := c.Clients.For(source).Do(req)
	if err != nil {
		return failure("endpoint", err)
	}
	_, _ = outbound.ReadLimited(res.Body, maxEndpointReadLen)
	_ = res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound:
		return Probe{Reason: ReasonNotFound, Detail: "The endpoint answered HTTP 404."}
	case res.StatusCode >= 500:
		return Probe{Reason: ReasonHTTPError, Detail: fmt.Sprintf("The endpoint answered HTTP %d.", res.StatusCode)}
	}
	return Probe{OK: true, Reason: ReasonOK, Detail: fmt.Sprintf("The endpoint answered HTTP %d.", res.StatusCode)}
}

// failure maps a fetch error to a stable reason. The detail names the kind of failure,
// never the other host's answer.
func failure(what string, err error) Probe {
	var (
		oe      *outbound.Error
		status  *registry.StatusError
		dnsErr  *net.DNSError
		opErr   *net.OpError
		netErr  net.Error
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &oe):
		return Probe{Reason: ReasonNotAllowed, Detail: "ltiop's outbound policy does not allow the " + what + "'s address: " + oe.Reason + "."}
	case errors.As(err, &status) && status.Status == http.StatusNotFound:
		return Probe{Reason: ReasonNotFound, Detail: "The " + what + " answered HTTP 404."}
	case errors.As(err, &status):
		return Probe{Reason: ReasonHTTPError, Detail: fmt.Sprintf("The %s answered HTTP %d.", what, status.Status)}
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid), errors.As(err, &verify), errors.As(err, &record):
		return Probe{Reason: ReasonTLSError, Detail: "The TLS connection to the " + what + " failed (certificate not trusted, expired or for another host, or not TLS)."}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return Probe{Reason: ReasonTimeout, Detail: "The " + what + " did not answer within " + probeTimeout.String() + "."}
	case errors.As(err, &dnsErr):
		return Probe{Reason: ReasonDNSError, Detail: "The " + what + "'s host name does not resolve."}
	case errors.As(err, &opErr):
		return Probe{Reason: ReasonUnreachable, Detail: "The " + what + " refused or dropped the connection."}
	}
	return Probe{Reason: ReasonFailed, Detail: "The " + what + " could not be fetched."}
}
