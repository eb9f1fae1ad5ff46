package webserver

import (
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
)

// rateLimited are the routes anyone can reach without a credential, by "METHOD /path",
// with their limit group. The Bearer and LTIK APIs are not here: a credential guards them.
var rateLimited = map[string]string{
	"GET " + paths.Login:                    "launch",
	"POST " + paths.Login:                   "launch",
	"POST " + paths.Launch:                  "launch",
	"POST " + paths.LaunchComplete:          "launch",
	"GET " + paths.Register:                 "register",
	"GET " + paths.RegisterWithToken:        "register", // one bucket with /lti/register: guessing tokens costs the same
	"POST " + paths.PlatformRegister:        "register", // a tool registering with ltiop as the platform: the same bucket
	"GET " + paths.PlatformRegistrationPage: "register",
	"GET " + paths.PlatformAuthorize:        "platformAuthorize",
	"POST " + paths.PlatformAuthorize:       "platformAuthorize",
	"POST " + paths.PlatformToken:           "platformToken",
	"GET /oauth/start/{platformId}":         "oauth",
	"GET /oauth/callback":                   "oauth",
	"POST " + paths.Notices:                 "notices",
}

// rateLimits wraps the limited routes in their group's middleware.
type rateLimits struct {
	groups map[string]func(http.Handler) http.Handler
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
	return &rateLimits{groups: map[string]func(http.Handler) http.Handler{
		"launch":            l.Group(o.Launch).Middleware(page),
		"register":          l.Group(o.Register).Middleware(page),
		"platformAuthorize": l.Group(o.PlatformAuthorize).Middleware(page),
		"platformToken":     l.Group(o.PlatformToken).Middleware(token),
		"oauth":             l.Group(o.OAuth).Middleware(page),
		"notices":           l.Group(o.Notices).Middleware(apiError),
	}}
}

func rateLimitedError(secs int) *httpapi.Error {
	return httpapi.Errorf(http.StatusTooManyRequests, httpapi.CodeRateLimited,
		"Too many requests from this network address; try again in "+strconv.Itoa(secs)+" s.")
}

// wrap limits h when route is one of the limited routes.
func (l *rateLimits) wrap(route string, h http.Handler) http.Handler {
	if group, ok := rateLimited[route]; ok {
		return l.groups[group](h)
	}
	return h
}
