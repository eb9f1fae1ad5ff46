package webserver

import (
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// rateLimits holds each route of the table to its group's limit (Route.RateLimit).
type rateLimits struct {
	groups map[RateLimitGroup]func(http.Handler) http.Handler
}

func newRateLimits(o RateLimits, platform *platformmode.Platform) *rateLimits {
	l := ratelimit.New(o.MaxClients, o.TrustedProxies, o.Now)
	page := func(w http.ResponseWriter, r *http.Request, secs int) {
		httpapi.WriteErrorPage(w, r, rateLimitedError(secs), "Too many requests")
	}
	// The token endpoint answers tools in the OAuth 2.0 error form, as all its errors.
	token := func(w http.ResponseWriter, _ *http.Request, secs int) {
		e := rateLimitedError(secs)
		e.OAuth = "temporarily_unavailable"
		platform.TokenError(w, e)
	}
	// The notice endpoint answers platforms' servers: the envelope, never a page.
	apiError := func(w http.ResponseWriter, _ *http.Request, secs int) { httpapi.WriteError(w, rateLimitedError(secs)) }
	return &rateLimits{groups: map[RateLimitGroup]func(http.Handler) http.Handler{
		LimitLaunch:            l.Group(o.Launch).Middleware(page),
		LimitRegister:          l.Group(o.Register).Middleware(page),
		LimitPlatformAuthorize: l.Group(o.PlatformAuthorize).Middleware(page),
		LimitPlatformToken:     l.Group(o.PlatformToken).Middleware(token),
		LimitOAuth:             l.Group(o.OAuth).Middleware(page),
		LimitNotices:           l.Group(o.Notices).Middleware(apiError),
	}}
}

func rateLimitedError(secs int) *httpapi.Error {
	return httpapi.Errorf(http.StatusTooManyRequests, httpapi.CodeRateLimited,
		"Too many requests from this network address; try again in "+strconv.Itoa(secs)+" s.")
}

// wrap holds h to the limit of group ("" for none).
func (l *rateLimits) wrap(group RateLimitGroup, h http.Handler) http.Handler {
	if group == "" {
		return h
	}
	limit, ok := l.groups[group]
	if !ok {
		panic("route table: no rate-limit group " + string(group))
	}
	return limit(h)
}
