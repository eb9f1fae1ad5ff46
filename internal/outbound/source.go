package outbound

import (
	"net/http"
	"sync"
)

// Source is who supplied a URL ltiop fetches. Each source has its own allowance of
// private ranges (issue #34 §3): a URL is fetched under the allowance of whoever supplied
// it, never under a broader one, whoever fetches it and however much later.
type Source uint8

const (
	// SourceOperator is the operator or the integrator (kubectl, GitOps, the Bearer API):
	// outboundAllowCidrs.
	SourceOperator Source = iota
	// SourceDynamicRegistration is another party handing its URLs over through dynamic
	// registration, an LMS at /lti/register or a tool at /lti/platform/register:
	// dynamicRegistration.allowCidrs.
	SourceDynamicRegistration
)

func (s Source) String() string {
	if s == SourceDynamicRegistration {
		return "dynamic-registration"
	}
	return "operator"
}

// Clients are the HTTP clients of one kind of call (key sets, tokens…), one per Source,
// each from NewClient under that source's policy.
type Clients struct {
	Operator            *http.Client
	DynamicRegistration *http.Client
}

// For returns the client of source s. A source without a client gets one of the
// production policy (https, public addresses only), never another source's: a client
// left out fails closed.
func (c Clients) For(s Source) *http.Client {
	hc := c.Operator
	if s == SourceDynamicRegistration {
		hc = c.DynamicRegistration
	}
	if hc == nil {
		return productionClient()
	}
	return hc
}

// productionClient is the client of the zero Policy, shared by every Clients that lacks one.
var productionClient = sync.OnceValue(func() *http.Client { return NewClient(Policy{}) })
