package registry

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/test/utils/testkeys"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// A peer withdrew a key, compromised perhaps: until the cached set expires (max-age up to
// 24 h) a token signed with it still verifies. The annotation lti.ltiop.dev/refresh-key-set
// drops the cached set when it takes a new value, for platforms and tools alike; nothing
// else (a status write, removing the annotation) does.
func TestRefreshAnnotationDropsTheCachedKeySet(t *testing.T) {
	withdrawn, kept := testkeys.RSAKey(t, 0), testkeys.RSAKey(t, 1)
	peer := newPlatformJWKS(t,
		jwkMap(t, &withdrawn.PublicKey, map[string]string{"kid": "withdrawn"}),
		jwkMap(t, &kept.PublicKey, map[string]string{"kid": "kept"}))
	peer.cacheControl.Store("max-age=86400")
	ac := ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: peer.srv.URL}
	platform := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Name: "lms"}, Spec: ltiv1.PlatformRegistrationSpec{AuthConfig: ac}}
	tool := &ltiv1.ToolRegistration{ObjectMeta: metav1.ObjectMeta{Name: "tool"}, Spec: ltiv1.ToolRegistrationSpec{AuthConfig: ac}}

	for _, tc := range []struct {
		name   string
		before any
		after  func(value string) any
	}{
		{"PlatformRegistration", platform, func(v string) any {
			o := platform.DeepCopy()
			o.Annotations = map[string]string{ltiv1.AnnotationRefreshKeySet: v}
			return o
		}},
		{"ToolRegistration", tool, func(v string) any {
			o := tool.DeepCopy()
			o.Annotations = map[string]string{ltiv1.AnnotationRefreshKeySet: v}
			return o
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Both sources' policies may have fetched the set (an operator's registration and
			// a dynamic one naming the same URL): the request drops both copies.
			pk := NewPeerKeysBySource(outbound.Clients{Operator: loopbackClient(), DynamicRegistration: loopbackClient()})
			ctx := context.Background()
			bySource := func(src outbound.Source, kid string) error {
				_, err := pk.fromSet(ctx, setKey{source: src, url: ac.Key}, kid)
				return err
			}
			key := func() error {
				return errors.Join(bySource(outbound.SourceOperator, "withdrawn"), bySource(outbound.SourceDynamicRegistration, "withdrawn"))
			}
			peer.keys.Store([]map[string]any{
				jwkMap(t, &withdrawn.PublicKey, map[string]string{"kid": "withdrawn"}),
				jwkMap(t, &kept.PublicKey, map[string]string{"kid": "kept"})})
			if err := key(); err != nil {
				t.Fatalf("before the withdrawal: %v", err)
			}
			peer.keys.Store([]map[string]any{jwkMap(t, &kept.PublicKey, map[string]string{"kid": "kept"})})
			if err := key(); err != nil {
				t.Fatalf("the withdrawn key is still cached, as expected before the request: %v", err)
			}

			var logged []string
			logf := func(msg string, _ ...any) { logged = append(logged, msg) }
			status := tc.after("")
			pk.refreshOnRequest(logf, tc.before, status) // no annotation: a status write, say
			if err := key(); err != nil || len(logged) != 0 {
				t.Fatalf("an update without a new request dropped the set: %v, %v", err, logged)
			}

			first := tc.after("incident-1")
			pk.refreshOnRequest(logf, status, first)
			for _, src := range []outbound.Source{outbound.SourceOperator, outbound.SourceDynamicRegistration} {
				if err := bySource(src, "withdrawn"); !errors.Is(err, lti.ErrUnknownKey) {
					t.Fatalf("after the request, the withdrawn key (%s) = %v, want ErrUnknownKey", src, err)
				}
			}
			if len(logged) != 1 {
				t.Fatalf("logged %v, want one line", logged)
			}
			if err := bySource(outbound.SourceOperator, "kept"); err != nil {
				t.Fatalf("the kept key after the refetch: %v", err)
			}

			hits := peer.hits.Load()
			pk.refreshOnRequest(logf, first, tc.after("incident-1")) // the same value again
			pk.refreshOnRequest(logf, first, tc.after(""))           // removed
			if err := bySource(outbound.SourceOperator, "kept"); err != nil || peer.hits.Load() != hits {
				t.Fatalf("a request served once, or removed, dropped the set again (%d fetches, %v)", peer.hits.Load()-hits, err)
			}
		})
	}
}

// After the drop, the withdrawn key is not the last good key a failing refetch falls back
// on (stale-if-error): a peer that is down as well must not revive it.
func TestForgottenKeySetIsNoStaleFallback(t *testing.T) {
	k := testkeys.RSAKey(t, 0)
	peer := newPlatformJWKS(t, jwkMap(t, &k.PublicKey, map[string]string{"kid": "k"}))
	pk := NewPeerKeys(loopbackClient())
	ctx := context.Background()
	sk := setKey{source: outbound.SourceOperator, url: peer.srv.URL}
	if _, err := pk.fromSet(ctx, sk, "k"); err != nil {
		t.Fatal(err)
	}
	if !pk.Forget(peer.srv.URL) {
		t.Fatal("Forget found no cached set")
	}
	if pk.Forget(peer.srv.URL) {
		t.Fatal("Forget found the set twice")
	}
	peer.fail.Store(true)
	if _, err := pk.fromSet(ctx, sk, "k"); err == nil || errors.Is(err, lti.ErrUnknownKey) {
		t.Fatalf("with the peer down after the drop: %v, want an outage, not the dropped key", err)
	}
}
