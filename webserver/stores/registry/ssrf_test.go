package registry

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"

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
