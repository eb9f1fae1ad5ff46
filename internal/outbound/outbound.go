// Package outbound is how ltiop calls other hosts: key sets, token endpoints, NRPS and AGS,
// the OAuth2 broker's token requests, dynamic registration. Their URLs come from platforms,
// tools and requests, so no call may reach what ltiop can reach: the cluster network, the
// node, the cloud metadata service (SSRF).
//
// A Policy says what is allowed. Policy.Check validates a URL before anything is sent;
// NewClient returns an *http.Client that enforces the policy on every connection it opens,
// the first request's and each redirect's, on the address actually dialled after DNS
// resolution. ReadLimited bounds how much of an answer is read.
//
// Every refusal is an *Error, also when it comes back from (*http.Client).Do wrapped in a
// *url.Error: use errors.As. Its message never contains a query string, a fragment or user
// information; use Redact before logging any other error that may contain a URL.
// ErrorExcerpt is all of an upstream error body that may be passed on. Every request is
// counted in ltiop_outbound_requests_total and timed (metrics.go).
package outbound

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ltiop/ltiop/internal/version"
)

// Defaults of a Policy's zero fields.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxRedirects = 3
)

// Policy is what an outbound fetch may reach. The zero value is the production policy:
// https only, public addresses only, 10 s, 3 redirects.
type Policy struct {
	// AllowHTTP accepts plain http (dev mode); otherwise https only, also on redirects.
	AllowHTTP bool
	// AllowLoopback accepts 127.0.0.0/8 and ::1 (dev mode, the demo's local LMS simulator).
	AllowLoopback bool
	// AllowPrefixes are extra ranges accepted although private, link-local, loopback or
	// otherwise special (an on-premises LMS). They never exempt a cloud metadata address,
	// unless an entry is exactly that address (a /32 or /128).
	AllowPrefixes []netip.Prefix
	// Timeout bounds the whole exchange: dials, redirects, headers and reading the body.
	// Zero or negative: DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed. Zero: DefaultMaxRedirects;
	// negative: none (the first redirect is an error).
	MaxRedirects int
	// UserAgent is sent on requests that have none. Empty: version.UserAgent().
	UserAgent string
	// SameHostRedirects follows a redirect only to the first request's scheme, host and
	// port: for calls that carry a credential (a bearer token, a client assertion, which a
	// 307/308 sends again), so that it never leaves for another host.
	SameHostRedirects bool
	// Target names the calls in the metrics (TargetJWKS, TargetToken, …) unless a
	// request's context says otherwise (WithTarget). Empty: TargetOther.
	Target string
}

func (p Policy) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

func (p Policy) maxRedirects() int {
	switch {
	case p.MaxRedirects == 0:
		return DefaultMaxRedirects
	case p.MaxRedirects < 0:
		return 0
	}
	return p.MaxRedirects
}

func (p Policy) userAgent() string {
	if p.UserAgent == "" {
		return version.UserAgent()
	}
	return p.UserAgent
}

// Error is a URL or an address the policy refuses, or a limit reached. URL is the URL
// concerned without user information, query or fragment ("" when not known); Reason says
// why: "https required", "blocked address 10.0.0.5 (private)", "too many redirects (more
// than 3)", …
type Error struct {
	URL    string
	Reason string
}

func (e *Error) Error() string {
	if e.URL == "" {
		return "outbound: " + e.Reason
	}
	// Redact again: an Error built by a caller may hold a raw URL.
	return "outbound: " + RedactURL(e.URL) + ": " + e.Reason
}

// ErrTooLarge is returned (wrapped, with the limit) by ReadLimited when the body is longer
// than allowed. Test it with errors.Is.
var ErrTooLarge = errors.New("outbound: response body too large")

// Check validates a URL string before any request: absolute, scheme https (or http when
// AllowHTTP), no user information, a host, a valid port, and when the host is an IP
// address, an address the policy allows. Host names are checked when dialled (NewClient).
// The error is an *Error.
func (p Policy) Check(rawURL string) error {
	fail := func(reason string) error { return &Error{URL: RedactURL(rawURL), Reason: reason} }
	u, err := url.Parse(rawURL)
	if err != nil {
		return fail("not a valid URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return fail("https required")
		}
	case "":
		return fail("not an absolute URL")
	default:
		return fail(fmt.Sprintf("unsupported scheme %q (https required)", u.Scheme))
	}
	if u.Opaque != "" {
		return fail("not a hierarchical URL")
	}
	if u.User != nil {
		return fail("user information not allowed in URL")
	}
	host := u.Hostname()
	if host == "" {
		return fail("no host in URL")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fail("invalid port " + strconv.Quote(port))
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if r := p.Blocked(ip); r != "" {
			return fail(blockedReason(ip, "", r))
		}
	}
	return nil
}

func blockedReason(ip netip.Addr, host, why string) string {
	s := "blocked address " + ip.String() + " (" + why + ")"
	if host != "" && host != ip.String() {
		s += " for host " + host
	}
	return s
}

// ParsePrefixes parses configured ranges: CIDR prefixes ("10.0.0.0/8", "fd12::/48") or
// single addresses ("192.168.1.5" becomes 192.168.1.5/32, an IPv6 address a /128). Blank
// entries are skipped; host bits are cleared ("10.1.2.3/8" is 10.0.0.0/8); IPv4-mapped IPv6
// forms become IPv4 prefixes. The error names the first bad entry.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for i, raw := range list {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("outbound: allowed range %d (%q): %s", i+1, raw, why)
		}
		var pf netip.Prefix
		if strings.Contains(s, "/") {
			var err error
			if pf, err = netip.ParsePrefix(s); err != nil {
				return nil, bad("not a CIDR prefix such as 10.0.0.0/8 or fd12:3456::/48")
			}
		} else {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				return nil, bad("not an IP address or a CIDR prefix such as 10.0.0.0/8")
			}
			if ip.Zone() != "" {
				return nil, bad("an IPv6 zone is not allowed")
			}
			pf = netip.PrefixFrom(ip, ip.BitLen())
		}
		out = append(out, canonicalPrefix(pf))
	}
	return out, nil
}

// RedactURL returns raw without user information, query and fragment, shortened to 200
// bytes: safe to log.
func RedactURL(raw string) string {
	var s string
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		u.RawQuery, u.ForceQuery = "", false
		u.Fragment, u.RawFragment = "", ""
		s = u.String()
	} else {
		s = raw
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		// Drop what looks like user information: the authority's part before its last '@'.
		rest, scheme := s, ""
		if i := strings.Index(s, "://"); i >= 0 {
			scheme, rest = s[:i+3], s[i+3:]
		}
		authority, path := rest, ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authority, path = rest[:i], rest[i:]
		}
		if i := strings.LastIndexByte(authority, '@'); i >= 0 {
			authority = authority[i+1:]
		}
		s = scheme + authority + path
	}
	const maxLen = 200
	if len(s) > maxLen {
		s = s[:maxLen]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// Redact returns err with the URL of a *url.Error (what (*http.Client).Do returns)
// redacted by RedactURL, so that it can be logged: net/http keeps the query string, which
// may carry a token. Other errors are returned as they are.
func Redact(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	if top, ok := err.(*url.Error); ok { //nolint:errorlint // only the outermost error, by design: a *url.Error further down is handled below
		return &url.Error{Op: top.Op, URL: RedactURL(top.URL), Err: Redact(top.Err)}
	}
	// A *url.Error further down: keep the chain's message but redact that URL.
	return &redacted{msg: strings.ReplaceAll(err.Error(), ue.URL, RedactURL(ue.URL)), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// ReadLimited reads r to its end, at most maxBytes bytes. A longer body is an error wrapping
// ErrTooLarge (and what was read is discarded). A negative maxBytes counts as 0.
func ReadLimited(r io.Reader, maxBytes int64) ([]byte, error) {
	if maxBytes < 0 {
		maxBytes = 0
	}
	limit := maxBytes
	if limit < math.MaxInt64 {
		limit++ // one byte more tells a body of exactly maxBytes bytes from a longer one
	}
	b, err := io.ReadAll(io.LimitReader(r, limit))
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, maxBytes)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}
