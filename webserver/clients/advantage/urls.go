package advantage

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ltiop/ltiop/internal/outbound"
)

// parseHTTPURL accepts absolute http and https URLs with a host and no user info.
func parseHTTPURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("empty URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q is not an http(s) URL", raw)
	case u.Host == "":
		return nil, fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("URL of %s carries credentials", u.Host)
	}
	return u, nil
}

// SameHost reports whether other is an http(s) URL with the same scheme, host (case
// aside) and port (default ports made explicit) as base. It is the guard in front of every
// URL that did not come from the launch itself: paging links, item ids, redirects
// (T-NRPS-03). Since the scheme must match, an https base never leads to http.
func SameHost(base, other string) bool {
	b, err := parseHTTPURL(base)
	if err != nil {
		return false
	}
	o, err := parseHTTPURL(other)
	if err != nil {
		return false
	}
	return outbound.SameOrigin(b, o)
}

// AppendPath appends suffix to the path of a service URL and keeps its query: the AGS
// rule for {lineitem}/scores and {lineitem}/results, whose query "must also be added"
// (T-AGS-01, T-QUIRK-05). The URL is otherwise kept byte for byte (scheme, escaping,
// http://); a fragment is dropped.
//
//	AppendPath("https://lms/mod/lti/services.php/2/lineitems/11/lineitem?type_id=4", "/scores")
//	  = "https://lms/mod/lti/services.php/2/lineitems/11/lineitem/scores?type_id=4"
func AppendPath(resourceURL, suffix string) (string, error) {
	if _, err := parseHTTPURL(resourceURL); err != nil {
		return "", fmt.Errorf("advantage: %w", err)
	}
	suffix = strings.Trim(suffix, "/")
	if suffix == "" {
		return "", errors.New("advantage: empty path suffix")
	}
	s, _, _ := strings.Cut(resourceURL, "#")
	path, query := s, ""
	if i := strings.IndexByte(s, '?'); i >= 0 {
		path, query = s[:i], s[i:]
	}
	return strings.TrimRight(path, "/") + "/" + suffix + query, nil
}

// addQuery appends the non-empty name=value pairs of kv to raw's query, leaving what is
// already there untouched (service URLs often carry one: ?type_id=4, ?placement_id=_553_1).
func addQuery(raw string, kv ...string) string {
	s, _, _ := strings.Cut(raw, "#")
	var b strings.Builder
	b.WriteString(s)
	sep := "?"
	if strings.Contains(s, "?") {
		sep = "&"
		if strings.HasSuffix(s, "?") || strings.HasSuffix(s, "&") {
			sep = ""
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		b.WriteString(sep)
		b.WriteString(url.QueryEscape(kv[i]))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(kv[i+1]))
		sep = "&"
	}
	return b.String()
}

// links are the paging links of a response.
type links struct{ next, prev, first, last string }

// parseLinks reads the RFC 8288 Link headers of a response to requestURL. Relation types
// and parameter names compare case-insensitively; the target URL is kept verbatim
// (T-NRPS-02) and only resolved against requestURL when it is relative. The first link of
// each relation wins.
func parseLinks(h http.Header, requestURL string) links {
	var l links
	for _, v := range h.Values("Link") {
		for {
			v = strings.TrimLeft(v, " \t,")
			if v == "" {
				break
			}
			if v[0] != '<' {
				v = skipLinkValue(v)
				continue
			}
			end := strings.IndexByte(v, '>')
			if end < 0 {
				break
			}
			target := v[1:end]
			var rel string
			v, rel = linkParams(v[end+1:])
			for _, r := range strings.Fields(rel) {
				var slot *string
				switch strings.ToLower(r) {
				case "next":
					slot = &l.next
				case "prev", "previous":
					slot = &l.prev
				case "first":
					slot = &l.first
				case "last":
					slot = &l.last
				}
				if slot != nil && *slot == "" {
					*slot = resolveLink(target, requestURL)
				}
			}
		}
	}
	return l
}

// linkParams reads the ";name=value" parameters after a link target, up to the comma that
// ends the link value, and returns the rest and the rel parameter.
func linkParams(v string) (rest, rel string) {
	relSeen := false
	for {
		v = strings.TrimLeft(v, " \t")
		if v == "" || v[0] == ',' {
			return v, rel
		}
		if v[0] != ';' {
			return skipLinkValue(v), rel
		}
		v = strings.TrimLeft(v[1:], " \t")
		i := strings.IndexAny(v, "=;,")
		name := strings.TrimSpace(v[:max(i, 0)])
		if i < 0 {
			name, v = strings.TrimSpace(v), ""
		} else {
			v = v[i:]
		}
		var value string
		if v != "" && v[0] == '=' {
			v = strings.TrimLeft(v[1:], " \t")
			value, v = paramValue(v)
		}
		if strings.EqualFold(name, "rel") && !relSeen {
			rel, relSeen = value, true
		}
	}
}

// paramValue reads a token or a quoted string.
func paramValue(v string) (value, rest string) {
	if v == "" || v[0] != '"' {
		i := strings.IndexAny(v, ";,")
		if i < 0 {
			return strings.TrimSpace(v), ""
		}
		return strings.TrimSpace(v[:i]), v[i:]
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			}
		case '"':
			return b.String(), v[i+1:]
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String(), ""
}

// skipLinkValue skips a malformed link value up to the next comma outside quotes.
func skipLinkValue(v string) string {
	inQuote := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			inQuote = !inQuote
		case '\\':
			i++
		case ',':
			if !inQuote {
				return v[i:]
			}
		}
	}
	return ""
}

func resolveLink(target, requestURL string) string {
	u, err := url.Parse(target)
	if err != nil || u.IsAbs() {
		return target // verbatim; SameHost rejects it if it is garbage
	}
	base, err := url.Parse(requestURL)
	if err != nil {
		return target
	}
	return base.ResolveReference(u).String()
}

// check returns ErrForeignURL unless every link is on base's host.
func (l links) check(op, base string) error {
	for _, u := range [...]string{l.next, l.prev, l.first, l.last} {
		if u != "" && !SameHost(base, u) {
			return fmt.Errorf("advantage: %s: paging link to %s: %w", op, hostOf(u), ErrForeignURL)
		}
	}
	return nil
}

// checkPageURL returns ErrForeignURL unless a caller-given paging URL is on base's host.
func checkPageURL(op, base, page string) error {
	if !SameHost(base, page) {
		return fmt.Errorf("advantage: %s: page URL on %s: %w", op, hostOf(page), ErrForeignURL)
	}
	return nil
}

// checkItemURL returns ErrForeignURL unless id is on the host of one of the launch's
// service URLs.
func checkItemURL(op string, cred *Credentials, id string) error {
	if _, err := parseHTTPURL(id); err != nil {
		return fmt.Errorf("advantage: %s: line item id: %w: %w", op, err, ErrForeignURL)
	}
	for _, s := range cred.ServiceURLs {
		if SameHost(s, id) {
			return nil
		}
	}
	return fmt.Errorf("advantage: %s: line item on %s: %w", op, hostOf(id), ErrForeignURL)
}

// hostOf names a URL's host in errors (never its query, which may be long or sensitive).
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "an invalid URL"
}
