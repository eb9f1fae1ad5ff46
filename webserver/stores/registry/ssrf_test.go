package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/test/utils/testoutbound"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// wantRefused asserts a key lookup failed as an outage refused by the outbound policy,
// never as an unknown key (which would read as a bad token).
func wantRefused(t *testing.T, err error, reason string) {
	t.Helper()
	var oe *outbound.Error
	if errors.Is(err, lti.ErrUnknownKey) || !errors.As(err, &oe) {
		t.Fatalf("got %v, want an *outbound.Error (%s)", err, reason)
	}
}

// A platform's (or tool's) key set URL pointing inside the network is not fetched.
func TestKeySetURLOnInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	pk := NewPeerKeys(outbound.NewClient(testoutbound.Public()))
	_, err := pk.PlatformKey(context.Background(), jwksPlatform(internal.URL+"/jwks"), "k1")
	wantRefused(t, err, "loopback")
	internal.Untouched(t)

	// The default client (nil) is the production policy: loopback refused too.
	_, err = NewPeerKeys(nil).PlatformKey(context.Background(), jwksPlatform(internal.URL+"/jwks"), "k1")
	wantRefused(t, err, "https required")
	internal.Untouched(t)
}

// The metadata address is refused even when the allowed ranges cover everything.
func TestKeySetURLOnMetadataAddressRefused(t *testing.T) {
	p := outbound.Policy{AllowHTTP: true, AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	pk := NewPeerKeys(outbound.NewClient(p))
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/meta-data/"} {
		_, err := pk.PlatformKey(context.Background(), jwksPlatform(u), "k1")
		wantRefused(t, err, "cloud metadata")
	}
}

// A key set on a public host that redirects inside is refused at the redirect; a key set
// that merely moved to another public host is still followed.
func TestKeySetRedirectToInternalAddressRefused(t *testing.T) {
	internal := testoutbound.NewInternal(t)
	k1 := testkeys.RSAKey(t, 0)
	moved := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	lms := http.NewServeMux()
	lms.HandleFunc("/inside", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/jwks", http.StatusFound)
	})
	lms.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, moved.srv.URL, http.StatusMovedPermanently)
	})
	srv := startLMS(t, lms)
	pk := NewPeerKeys(outbound.NewClient(testoutbound.Public()))

	_, err := pk.PlatformKey(context.Background(), jwksPlatform(srv+"/inside"), "k1")
	wantRefused(t, err, "redirect to loopback")
	internal.Untouched(t)

	if got, err := pk.PlatformKey(context.Background(), jwksPlatform(srv+"/moved"), "k1"); err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("key set moved to another public host: %v, %v", got, err)
	}
}

func startLMS(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := newPlatformJWKS(t)
	srv.srv.Config.Handler = h
	return srv.srv.URL
}

// labelled is a registration of the key set at jwks, written by dynamic registration when
// dynamic is set (its origin label), else by the operator.
func labelled(name, jwks string, dynamic bool) *ltiv1.PlatformRegistration {
	pr := &ltiv1.PlatformRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid")},
		Spec: ltiv1.PlatformRegistrationSpec{URL: "https://lms.example", ClientID: name,
			AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: jwks}},
	}
	if dynamic {
		pr.Labels = map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration}
	}
	return pr
}

// The attack of issue #34 item 3: the operator allows an on-premises LMS's range
// (outboundAllowCidrs; 127.0.0.1 stands for it), and a platform registered through
// anonymous dynamic registration names a key set in that range. Its key set is fetched
// under dynamic registration's allowance, never the operator's: a resolver given only the
// operator's client refuses it, also when the same URL is cached for an operator's
// registration.
func TestDynamicRegistrationKeySetNotFetchedUnderTheOperatorsAllowance(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	lms := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	reg := New()
	reg.Apply(labelled("dynamic", lms.srv.URL, true))
	reg.Apply(labelled("operator", lms.srv.URL, false))
	pk := NewPeerKeys(outbound.NewClient(testoutbound.Public()))
	ctx := context.Background()

	_, err := pk.PlatformKey(ctx, reg.Get("dynamic"), "k1")
	wantRefused(t, err, "a dynamic registration's key set under the operator's allowance")
	if n := lms.hits.Load(); n != 0 {
		t.Fatalf("the key set was fetched %d times for the dynamic registration", n)
	}
	if got, err := pk.PlatformKey(ctx, reg.Get("operator"), "k1"); err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("the operator's registration: %v, %v", got, err)
	}
	_, err = pk.PlatformKey(ctx, reg.Get("dynamic"), "k1")
	wantRefused(t, err, "answered from the operator's cached fetch")
}

// Each source's client fetches its registrations' key sets, platforms' and tools' alike:
// dynamicRegistration.allowCidrs opens the dynamic ones only.
func TestKeySetsFetchedWithTheClientOfTheirSource(t *testing.T) {
	k1 := testkeys.RSAKey(t, 0)
	lms := newPlatformJWKS(t, jwkMap(t, &k1.PublicKey, map[string]string{"kid": "k1"}))
	reg, tools := New(), NewTools()
	reg.Apply(labelled("dynamic", lms.srv.URL, true))
	reg.Apply(labelled("operator", lms.srv.URL, false))
	for _, dynamic := range []bool{true, false} {
		tr := &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("tool-", dynamic), UID: types.UID(fmt.Sprint(dynamic))},
			Spec: ltiv1.ToolRegistrationSpec{AuthConfig: ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: lms.srv.URL}}}
		if dynamic {
			tr.Labels = map[string]string{ltiv1.LabelOrigin: ltiv1.OriginDynamicRegistration}
		}
		tools.Apply(tr)
	}
	pk := NewPeerKeysBySource(outbound.Clients{DynamicRegistration: outbound.NewClient(testoutbound.Public())}) // the operator's: production
	ctx := context.Background()

	if got, err := pk.PlatformKey(ctx, reg.Get("dynamic"), "k1"); err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("the dynamic registration: %v, %v", got, err)
	}
	if got, err := pk.ToolKey(ctx, tools.Get("tool-true"), "k1"); err != nil || !got.Equal(&k1.PublicKey) {
		t.Fatalf("the tool that registered itself: %v, %v", got, err)
	}
	_, err := pk.PlatformKey(ctx, reg.Get("operator"), "k1")
	wantRefused(t, err, "the operator's registration under the production policy")
	_, err = pk.ToolKey(ctx, tools.Get("tool-false"), "k1")
	wantRefused(t, err, "the operator's tool under the production policy")
	if n, err := pk.FetchKeySet(ctx, outbound.SourceDynamicRegistration, lms.srv.URL); n != 1 || err != nil {
		t.Fatalf("FetchKeySet of a dynamic registration: %d, %v", n, err)
	}
	_, err = pk.FetchKeySet(ctx, outbound.SourceOperator, lms.srv.URL)
	wantRefused(t, err, "FetchKeySet of the operator's")
}
