package toolmode

import (
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// ServiceHealth learns of the calls to an LMS's services that failed on the LMS's side
// (launchhealth makes Events of them on the registration). It must not block: it is
// called on the request path.
type ServiceHealth interface {
	ServiceFailed(p *registry.Platform, code string, status int)
}

// serviceFailed tells ServiceHealth of e when the LMS, not the integrator, is the cause.
func (t *Tool) serviceFailed(p *registry.Platform, e *httpapi.Error) {
	if t.opts.ServiceHealth == nil || p == nil {
		return
	}
	switch e.Code {
	case httpapi.CodeUpstream, httpapi.CodeUpstreamTimeout, httpapi.CodeURLNotAllowed:
		status := 0
		if e.Upstream != nil {
			status = e.Upstream.Status
		}
		t.opts.ServiceHealth.ServiceFailed(p, e.Code, status)
	}
}
