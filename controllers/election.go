package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/registration"
)

// sharedIdentity finds, through a field index, the registrations of one kind that share a
// value that must be theirs alone (the same (url, clientId) for platforms, the same client
// id for tools, the same LTI 1.1 consumer key). O is the kind, L its list. A registration
// whose identity is "" has none: it is not indexed and has no peers.
type sharedIdentity[L any, PL interface {
	*L
	client.ObjectList
}, O client.Object] struct {
	// index is the name of the field index that maps registrations to their identity.
	index    string
	identity func(O) string
}

// newSharedIdentity spells out only the list type; the kind follows from identity.
func newSharedIdentity[L any, PL interface {
	*L
	client.ObjectList
}, O client.Object](index string, identity func(O) string) sharedIdentity[L, PL, O] {
	return sharedIdentity[L, PL, O]{index: index, identity: identity}
}

// indexValue is the field index function of s.index.
func (s sharedIdentity[L, PL, O]) indexValue(obj client.Object) []string {
	if id := s.identity(obj.(O)); id != "" {
		return []string{id}
	}
	return nil
}

// peers lists, from the cache's index, the other registrations with reg's identity.
func (s sharedIdentity[L, PL, O]) peers(ctx context.Context, c client.Reader, reg O) ([]O, error) {
	id := s.identity(reg)
	if id == "" {
		return nil, nil
	}
	list := PL(new(L))
	if err := c.List(ctx, list, client.InNamespace(reg.GetNamespace()), client.MatchingFields{s.index: id}); err != nil {
		return nil, err
	}
	var peers []O
	err := meta.EachListItem(list, func(item runtime.Object) error {
		if p := item.(O); p.GetUID() != reg.GetUID() {
			peers = append(peers, p)
		}
		return nil
	})
	return peers, err
}

// enqueuePeers maps a registration to its peers: their state may change when it appears,
// changes or goes away (an update maps both the old and the new object).
func (s sharedIdentity[L, PL, O]) enqueuePeers(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		peers, err := s.peers(ctx, c, obj.(O))
		if err != nil {
			log.FromContext(ctx).Error(err, "listing the registrations that share an identity", "index", s.index)
			return nil
		}
		var reqs []reconcile.Request
		for _, p := range peers {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		}
		return reqs
	}
}

// election decides, among the registrations that share an identity, which one is used: the
// oldest, so adding a duplicate never breaks live launches.
type election[L any, PL interface {
	*L
	client.ObjectList
}, O client.Object] struct {
	sharedIdentity[L, PL, O]
	// duplicate is the message of the newer registration that older already holds.
	duplicate func(older, newer O) string
}

// newElection spells out only the list type; the kind follows from identity.
func newElection[L any, PL interface {
	*L
	client.ObjectList
}, O client.Object](index string, identity func(O) string, duplicate func(older, newer O) string) election[L, PL, O] {
	return election[L, PL, O]{sharedIdentity: newSharedIdentity[L, PL](index, identity), duplicate: duplicate}
}

// check returns a DuplicateRegistration problem when an older registration, not being
// deleted, holds reg's identity.
func (e election[L, PL, O]) check(ctx context.Context, c client.Reader, reg O) (*problem, error) {
	peers, err := e.peers(ctx, c, reg)
	if err != nil {
		return nil, err
	}
	for _, other := range peers {
		if other.GetDeletionTimestamp().IsZero() && registration.Older(
			other.GetCreationTimestamp().Time, other.GetName(), reg.GetCreationTimestamp().Time, reg.GetName()) {
			return &problem{ltiv1.ReasonDuplicateRegistration, e.duplicate(other, reg)}, nil
		}
	}
	return nil, nil
}
