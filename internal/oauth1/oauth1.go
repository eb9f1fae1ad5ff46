// Package oauth1 signs and verifies OAuth 1.0a requests as LTI 1.1 uses them (RFC 5849
// with HMAC-SHA1 and HMAC-SHA256, two-legged: no token secret), with the oauth_body_hash
// extension, and computes the LTI 1.3 migration's oauth_consumer_key_sign, the other HMAC
// keyed with an LTI 1.1 shared secret. Standard library only: the web server's LTI 1.1
// handlers (webserver/protocol/lti11) and the LMS simulator both build on it.
//
// It is in internal/, not beside webserver/protocol/lti11, because simulators may import
// only api/ and internal/ and the LMS simulator signs with it.
package oauth1

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // G505: OAuth 1.0a HMAC-SHA1 and the body hash are what LTI 1.1 LMSs sign with
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Signature methods (RFC 5849 §3.4; HMAC-SHA256 is the same construction with SHA-256).
const (
	MethodHMACSHA1   = "HMAC-SHA1"
	MethodHMACSHA256 = "HMAC-SHA256"
)

// Param is one request parameter; names may repeat (RFC 5849 §3.4.1.3).
type Param struct{ Name, Value string }

// Params are the parameters of a request in no particular order.
type Params []Param

// Get returns the first value of name, or "".
func (ps Params) Get(name string) string {
	for _, p := range ps {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// Count returns how many times name occurs.
func (ps Params) Count(name string) int {
	n := 0
	for _, p := range ps {
		if p.Name == name {
			n++
		}
	}
	return n
}

// FromValues appends the pairs of v (a parsed query or form body).
func (ps Params) FromValues(v url.Values) Params {
	for name, values := range v {
		for _, value := range values {
			ps = append(ps, Param{name, value})
		}
	}
	return ps
}

// Encode is the RFC 5849 §3.6 percent-encoding: every byte but ALPHA, DIGIT, '-', '.', '_'
// and '~' becomes %XX with upper-case hex.
func Encode(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// BaseURI is the base string URI of RFC 5849 §3.4.1.2: scheme and host in lower case, the
// default port left out, no query or fragment. The query's parameters go into the
// parameter list instead.
func BaseURI(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, nil
}

// BaseString is the signature base string (RFC 5849 §3.4.1): the method, the base URI and
// the normalised parameters, each encoded, joined by '&'. oauth_signature and realm are
// left out; every other parameter (query, form body, oauth_*) is in params.
func BaseString(method, baseURI string, params Params) string {
	pairs := make([][2]string, 0, len(params))
	for _, p := range params {
		if p.Name == "oauth_signature" || p.Name == "realm" {
			continue
		}
		pairs = append(pairs, [2]string{Encode(p.Name), Encode(p.Value)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0] != pairs[j][0] {
			return pairs[i][0] < pairs[j][0]
		}
		return pairs[i][1] < pairs[j][1]
	})
	var norm strings.Builder
	for i, p := range pairs {
		if i > 0 {
			norm.WriteByte('&')
		}
		norm.WriteString(p[0])
		norm.WriteByte('=')
		norm.WriteString(p[1])
	}
	return strings.ToUpper(method) + "&" + Encode(baseURI) + "&" + Encode(norm.String())
}

// Signature is the base64 HMAC of base keyed with the consumer secret (LTI has no token
// secret, so the key is "<secret>&"). ok is false for an unsupported method.
func Signature(signatureMethod, consumerSecret, base string) (sig string, ok bool) {
	var h func() hash.Hash
	switch signatureMethod {
	case MethodHMACSHA1:
		h = sha1.New
	case MethodHMACSHA256:
		h = sha256.New
	default:
		return "", false
	}
	m := hmac.New(h, []byte(Encode(consumerSecret)+"&"))
	m.Write([]byte(base))
	return base64.StdEncoding.EncodeToString(m.Sum(nil)), true
}

// BodyHash is the oauth_body_hash of body: base64 of its SHA-1 (OAuth Request Body Hash
// 1.0, the one LTI 1.1 Basic Outcomes names).
func BodyHash(body []byte) string {
	sum := sha1.Sum(body) //nolint:gosec // G401: the body hash extension is SHA-1 by definition
	return base64.StdEncoding.EncodeToString(sum[:])
}

// ParseAuthorization reads the OAuth parameters of an "Authorization: OAuth k="v", …"
// header (RFC 5849 §3.5.1); realm is dropped. ok is false when the header is not OAuth or a
// pair is malformed.
func ParseAuthorization(h string) (Params, bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "OAuth") {
		return nil, false
	}
	var out Params
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, quoted, found := strings.Cut(part, "=")
		if !found || len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
			return nil, false
		}
		n, err1 := url.PathUnescape(name)
		v, err2 := url.PathUnescape(quoted[1 : len(quoted)-1])
		if err1 != nil || err2 != nil {
			return nil, false
		}
		if n != "realm" {
			out = append(out, Param{n, v})
		}
	}
	return out, true
}

// Authorization renders oauth parameters as an "OAuth …" header value.
func Authorization(oauth Params) string {
	var b strings.Builder
	b.WriteString("OAuth ")
	for i, p := range oauth {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Encode(p.Name))
		b.WriteString(`="`)
		b.WriteString(Encode(p.Value))
		b.WriteByte('"')
	}
	return b.String()
}

// Sign returns the oauth_* parameters, oauth_signature last, of a request to rawURL
// carrying params (query and form body; may be nil). nonce and timestamp are the caller's
// (one fresh random nonce per request). bodyHash, when not empty, is signed as
// oauth_body_hash (requests with a non-form body, such as POX).
func Sign(method, rawURL string, params Params, consumerKey, consumerSecret, signatureMethod, nonce, timestamp, bodyHash string) (Params, error) {
	base, err := BaseURI(rawURL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(rawURL)
	oauth := Params{
		{"oauth_consumer_key", consumerKey},
		{"oauth_nonce", nonce},
		{"oauth_signature_method", signatureMethod},
		{"oauth_timestamp", timestamp},
		{"oauth_version", "1.0"},
	}
	if bodyHash != "" {
		oauth = append(oauth, Param{"oauth_body_hash", bodyHash})
	}
	all := append(append(append(Params{}, params...), oauth...), Params{}.FromValues(u.Query())...)
	sig, ok := Signature(signatureMethod, consumerSecret, BaseString(method, base, all))
	if !ok {
		return nil, ErrUnsupportedMethod
	}
	return append(oauth, Param{"oauth_signature", sig}), nil
}

// SignatureMatches reports, in constant time, whether the request's oauth_signature is the
// one consumerSecret gives over method, rawURL and params (which hold every parameter of
// the request: query, form body and the Authorization header's oauth_*).
func SignatureMatches(method, rawURL string, params Params, consumerSecret string) bool {
	base, err := BaseURI(rawURL)
	if err != nil {
		return false
	}
	want, ok := Signature(params.Get("oauth_signature_method"), consumerSecret, BaseString(method, base, params))
	got := params.Get("oauth_signature")
	return ok && got != "" && params.Count("oauth_signature") == 1 && hmac.Equal([]byte(want), []byte(got))
}

// Verification failures, in the order Check tests them.
var (
	ErrUnsupportedMethod = errors.New("oauth1: oauth_signature_method is neither HMAC-SHA1 nor HMAC-SHA256")
	ErrStaleTimestamp    = errors.New("oauth1: oauth_timestamp is outside the accepted window")
	ErrInvalidSignature  = errors.New("oauth1: the signature does not match")
	ErrBodyHash          = errors.New("oauth1: oauth_body_hash is missing or does not match the body")
)

// Window is how far oauth_timestamp may be from now either way. A nonce must be remembered
// at least 2×Window: a timestamp Window ahead stays acceptable for another 2×Window.
const Window = 5 * time.Minute

// NonceTTL is how long a used nonce is remembered.
const NonceTTL = 2 * Window

// Bounds on what a request may carry, so a refused request costs little and a recorded
// nonce is small.
const (
	MaxNonceLength       = 128
	MaxConsumerKeyLength = 255
)

// Required are the OAuth parameters every signed request carries exactly once.
var Required = []string{"oauth_consumer_key", "oauth_signature_method", "oauth_timestamp", "oauth_nonce", "oauth_signature"}

// Missing lists the Required parameters that are absent, empty or repeated in ps.
func Missing(ps Params) []string {
	var out []string
	for _, name := range Required {
		if ps.Count(name) != 1 || ps.Get(name) == "" {
			out = append(out, name)
		}
	}
	return out
}

// Request is a signed request as received.
type Request struct {
	Method string
	// URL is the URL the request was sent to as the sender saw it (behind a proxy: the
	// public URL, never the Host header), with the query as received.
	URL string
	// Params are every parameter: query, form body, and the Authorization header's oauth_*.
	Params Params
	// Body, when BodyHashed, is a non-form body whose oauth_body_hash must match.
	Body       []byte
	BodyHashed bool
}

// Check verifies a request whose Required parameters are present, signed with
// consumerSecret: the method, the timestamp window, the signature and, for a non-form
// body, the body hash. Single use of the nonce is the caller's, after Check succeeds, so an
// unsigned request never grows a replay store.
func Check(r Request, consumerSecret string, now time.Time) error {
	ps := r.Params
	method := ps.Get("oauth_signature_method")
	if method != MethodHMACSHA1 && method != MethodHMACSHA256 {
		return ErrUnsupportedMethod
	}
	ts, err := strconv.ParseInt(ps.Get("oauth_timestamp"), 10, 64)
	if err != nil {
		return ErrStaleTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Window || d < -Window {
		return ErrStaleTimestamp
	}
	if !SignatureMatches(r.Method, r.URL, ps, consumerSecret) {
		return ErrInvalidSignature
	}
	if r.BodyHashed {
		if ps.Count("oauth_body_hash") != 1 || !hmac.Equal([]byte(ps.Get("oauth_body_hash")), []byte(BodyHash(r.Body))) {
			return ErrBodyHash
		}
	}
	return nil
}

// NonceKey is the replay-store key of a request's nonce: per consumer key, like the
// signature that covers it.
func NonceKey(ps Params) string {
	return "oauth1:" + ps.Get("oauth_consumer_key") + "\x00" + ps.Get("oauth_nonce")
}

// ConsumerKeySign is oauth_consumer_key_sign of the LTI 1.3 Migration Guide: the base64
// HMAC-SHA256, keyed with the 1.1 shared secret, of
// oauth_consumer_key & deployment_id & iss & client_id & exp & nonce.
func ConsumerKeySign(consumerKey, deploymentID, issuer, clientID string, exp int64, nonce, secret string) string {
	base := consumerKey + "&" + deploymentID + "&" + issuer + "&" + clientID + "&" + strconv.FormatInt(exp, 10) + "&" + nonce
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(base))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
