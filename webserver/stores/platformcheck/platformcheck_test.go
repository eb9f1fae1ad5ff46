package platformcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/webserver/stores/registry"
)

// Each failure of a real fetch over loopback maps to its stable reason.
func TestReasons(t *testing.T) {
	policy := outbound.Policy{AllowHTTP: true, AllowLoopback: true}
	c := &Checker{KeySets: registry.NewPeerKeys(outbound.NewClient(policy)), Clients: outbound.Clients{Operator: outbound.NewClient(policy)}}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) })
	mux.HandleFunc("GET /html", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`<html>`)) })
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	plain := httptest.NewServer(mux)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(mux) // a certificate nobody trusts
	defer tlsSrv.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + closed.Addr().String() + "/jwks"
	_ = closed.Close()

	for _, tc := range []struct{ url, want string }{
		{plain.URL + "/missing", ReasonNotFound},
		{plain.URL + "/empty", ReasonNoRSAKey},
		{plain.URL + "/html", ReasonInvalidSet},
		{plain.URL + "/broken", ReasonHTTPError},
		{tlsSrv.URL + "/empty", ReasonTLSError},
		{refused, ReasonUnreachable},
		{"http://169.254.169.254/jwks", ReasonNotAllowed}, // the SSRF guard, never dialled
	} {
		got := c.keySet(context.Background(), outbound.SourceOperator, ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: tc.url})
		if got.OK || got.Reason != tc.want {
			t.Errorf("%s: %+v, want reason %s", tc.url, got, tc.want)
		}
	}
	if got := c.endpoint(context.Background(), outbound.SourceOperator, http.MethodPost, plain.URL+"/missing"); got.Reason != ReasonNotFound {
		t.Errorf("endpoint 404: %+v", got)
	}
	if got := c.endpoint(context.Background(), outbound.SourceOperator, http.MethodGet, plain.URL+"/html"); !got.OK {
		t.Errorf("endpoint answering: %+v", got)
	}
}

// Issue #34 item 3: the check of a registration dynamic registration wrote calls its key
// set and endpoints under dynamic registration's policy, never the operator's broader
// one; the operator's registrations keep theirs.
func TestCheckUsesThePolicyOfTheRegistrationsSource(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) }) // the endpoints, unauthenticated
	lms := httptest.NewServer(mux)                                                                             // on loopback: inside the network but for the operator's allowance
	defer lms.Close()
	operator := outbound.NewClient(outbound.Policy{AllowHTTP: true, AllowLoopback: true})
	c := &Checker{KeySets: registry.NewPeerKeys(operator), Clients: outbound.Clients{Operator: operator}}
	spec := ltiv1.PlatformRegistrationSpec{AuthenticationEndpoint: ltiv1.EndpointURL(lms.URL + "/auth"),
		AccesstokenEndpoint: ltiv1.EndpointURL(lms.URL + "/token"), AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms.URL + "/jwks"}}

	got := c.Check(context.Background(), &registry.Platform{ID: "dynamic", Spec: spec, Source: outbound.SourceDynamicRegistration})
	for name, p := range map[string]Probe{"key set": got.KeySet, "authentication endpoint": got.AuthenticationEndpoint, "token endpoint": got.AccesstokenEndpoint} {
		if p.OK || p.Reason != ReasonNotAllowed {
			t.Errorf("dynamic registration's %s: %+v, want %s", name, p, ReasonNotAllowed)
		}
	}
	got = c.Check(context.Background(), &registry.Platform{ID: "operator", Spec: spec, Source: outbound.SourceOperator})
	if got.KeySet.Reason != ReasonNoRSAKey || !got.AuthenticationEndpoint.OK || !got.AccesstokenEndpoint.OK {
		t.Errorf("the operator's registration: %+v", got)
	}
}
