package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Targets: what an outbound call is for, the target label of the metrics.
const (
	TargetJWKS   = "jwks"   // a platform's or a tool's key set
	TargetToken  = "token"  // an LMS token endpoint (client credentials)
	TargetNRPS   = "nrps"   // Names and Role Provisioning Services
	TargetAGS    = "ags"    // Assignment and Grade Services
	TargetGroups = "groups" // Course Groups Service
	TargetDynReg = "dynreg" // dynamic registration
	TargetOAuth  = "oauth"  // the OAuth2 broker's calls to an LMS token endpoint
	TargetOther  = "other"
)

// Targets of the Platform Notification Service: notices delivered to the integrator's
// webhook, and the platform's notice-handler endpoint.
const (
	TargetWebhook = "webhook"
	// TargetPlatformData: the integrator's platform data API (platform mode's NRPS and AGS).
	TargetPlatformData = "platform-data"
	TargetPNS          = "pns"
)

// Outcomes: the outcome label.
const (
	OutcomeSuccess     = "success"      // 2xx
	OutcomeRedirect    = "redirect"     // 3xx
	OutcomeClientError = "client_error" // 4xx
	OutcomeServerError = "server_error" // 5xx and other statuses
	OutcomeRefused     = "refused"      // the policy refused the URL, an address or a redirect: nothing sent
	OutcomeTimeout     = "timeout"
	OutcomeError       = "error" // no answer: connection refused, TLS, DNS, …
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ltiop_outbound_requests_total",
		Help: "Outbound HTTP requests (each redirect is one) by target (jwks, token, nrps, ags, groups, dynreg, oauth, webhook, pns) and outcome (success, redirect, client_error, server_error, refused, timeout, error).",
	}, []string{"target", "outcome"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ltiop_outbound_request_duration_seconds",
		Help:    "Time from sending an outbound request to its response headers (or its failure), by target. Refused requests are not timed.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"target"})
)

func init() { metrics.Registry.MustRegister(requestsTotal, requestDuration) }

type targetKey struct{}

// WithTarget labels the requests sent with ctx as target in the metrics, overriding the
// policy's Target: one client for the calls of one kind of credential (an LMS's token,
// NRPS and AGS endpoints), each call counted under its own name.
func WithTarget(ctx context.Context, target string) context.Context {
	return context.WithValue(ctx, targetKey{}, target)
}

// targetOf is the label of a request: its context's, else the policy's, else "other".
// Labels are the Target constants only, so the series stay few.
func targetOf(ctx context.Context, policy string) string {
	t, _ := ctx.Value(targetKey{}).(string)
	if t == "" {
		t = policy
	}
	switch t {
	case TargetJWKS, TargetToken, TargetNRPS, TargetAGS, TargetDynReg, TargetOAuth:
		return t
	case TargetGroups:
		return t
	}
	return TargetOther
}

func countRefused(target string) {
	requestsTotal.WithLabelValues(target, OutcomeRefused).Inc()
}

// observe counts and times one round trip.
func observe(target string, start time.Time, resp *http.Response, err error) {
	outcome := outcomeOf(resp, err)
	requestsTotal.WithLabelValues(target, outcome).Inc()
	if outcome != OutcomeRefused {
		requestDuration.WithLabelValues(target).Observe(time.Since(start).Seconds())
	}
}

func outcomeOf(resp *http.Response, err error) string {
	if err != nil {
		var e *Error
		var ne net.Error
		switch {
		case errors.As(err, &e):
			return OutcomeRefused
		case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
			return OutcomeTimeout
		}
		return OutcomeError
	}
	switch strconv.Itoa(resp.StatusCode)[0] {
	case '2':
		return OutcomeSuccess
	case '3':
		return OutcomeRedirect
	case '4':
		return OutcomeClientError
	}
	return OutcomeServerError
}
