package registry

import (
	"context"
	"crypto/rsa"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/outbound"
	"github.com/ltiop/ltiop/internal/registration"
)

// Tool is an immutable snapshot of one ToolRegistration (platform mode). Callers must not
// modify it; a change in the cluster publishes a new snapshot.
type Tool struct {
	// ID is the registration's metadata.name, the tool ID of the API.
	ID         string
	Namespace  string
	UID        types.UID
	Generation int64
	Created    time.Time
	Spec       ltiv1.ToolRegistrationSpec
	// ClientID and DeploymentID are the values in force (spec, or their defaults).
	ClientID, DeploymentID string
	// Ready mirrors the Ready condition for the current generation.
	Ready bool
	// Judged says the controller has set the Ready condition, true or false, for the
	// current generation: what Ready says is its verdict on this spec.
	Judged bool
	// Health is status.launchHealth: the last launch and the last refusal, nil if none yet.
	Health *ltiv1.LaunchHealth
	// Source is who supplied its URLs (the origin label): its key set is fetched under
	// that source's outbound policy.
	Source outbound.Source

	// The spec's redirect URIs and scopes as strings, converted once per change.
	redirectURIs, scopes []string

	static staticKey
}

// Usable reports whether the tool may be launched and get tokens.
func (t *Tool) Usable() bool { return t != nil && t.Spec.IsActive() && t.Ready }

// RedirectionURIs returns the registered redirect URIs (shared: do not modify).
func (t *Tool) RedirectionURIs() []string { return t.redirectURIs }

// Scopes returns the allowed scopes (shared: do not modify).
func (t *Tool) Scopes() []string { return t.scopes }

// Tools holds the ToolRegistration snapshots, by name and by client id.
type Tools struct {
	mu       sync.RWMutex
	byID     map[string]*Tool
	byClient map[string]*Tool // the oldest of each client id, as the controller decides
	synced   toolscache.ResourceEventHandlerRegistration
	changed  chan struct{} // closed and replaced on every change (WaitFor)
}

// NewTools returns an empty tool registry.
func NewTools() *Tools {
	return &Tools{byID: map[string]*Tool{}, byClient: map[string]*Tool{}, changed: make(chan struct{})}
}

// Attach feeds the registry from the cache's ToolRegistration informer. Call it before the
// manager starts so the informer is part of its initial sync.
func (ts *Tools) Attach(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &ltiv1.ToolRegistration{})
	if err != nil {
		return fmt.Errorf("tool registration informer: %w", err)
	}
	h, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { ts.Apply(obj) },
		UpdateFunc: func(_, obj any) { ts.Apply(obj) },
		DeleteFunc: func(obj any) { ts.Forget(obj) },
	})
	if err != nil {
		return err
	}
	ts.synced = h
	return nil
}

// HasSynced reports whether the initial list has been loaded.
func (ts *Tools) HasSynced() bool { return ts.synced != nil && ts.synced.HasSynced() }

// Get returns the tool with the given ID (metadata.name), or nil.
func (ts *Tools) Get(id string) *Tool {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.byID[id]
}

// ByClientID returns the tool in use for clientID, or nil.
func (ts *Tools) ByClientID(clientID string) *Tool {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.byClient[clientID]
}

// Apply records a ToolRegistration (an informer's add or update).
func (ts *Tools) Apply(obj any) {
	reg, ok := obj.(*ltiv1.ToolRegistration)
	if !ok {
		return
	}
	t := &Tool{
		ID: reg.Name, Namespace: reg.Namespace, UID: reg.UID, Generation: reg.Generation,
		Created: reg.CreationTimestamp.Time, Spec: *reg.Spec.DeepCopy(),
		ClientID: reg.EffectiveClientID(), DeploymentID: reg.Spec.Deployment(),
		Health: reg.Status.LaunchHealth.DeepCopy(), Source: SourceOf(reg),
	}
	ts.mu.RLock()
	if old := ts.byID[reg.Name]; old != nil {
		t.static = old.static
	}
	ts.mu.RUnlock()
	t.static.parse(reg.Spec.AuthConfig)
	for _, u := range reg.Spec.RedirectionURIs {
		t.redirectURIs = append(t.redirectURIs, string(u))
	}
	for _, sc := range reg.Spec.Scopes {
		t.scopes = append(t.scopes, string(sc))
	}
	if c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionReady); c != nil {
		t.Judged = c.ObservedGeneration == reg.Generation
		t.Ready = c.Status == "True" && t.Judged
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old := ts.byID[t.ID]; old != nil {
		ts.unindex(old)
	}
	ts.byID[t.ID] = t
	if cur := ts.byClient[t.ClientID]; cur == nil || olderTool(t, cur) {
		ts.byClient[t.ClientID] = t
	}
	ts.notify()
}

// notify wakes the waiters of WaitFor; the caller holds ts.mu.
func (ts *Tools) notify() {
	close(ts.changed)
	ts.changed = make(chan struct{})
}

// WaitFor waits until cond holds for the tool id (nil when there is none) or ctx ends,
// and returns the last view and whether cond held: a write through the API answers once
// the informer shows it.
func (ts *Tools) WaitFor(ctx context.Context, id string, cond func(*Tool) bool) (*Tool, bool) {
	for {
		ts.mu.RLock()
		t, changed := ts.byID[id], ts.changed
		ts.mu.RUnlock()
		if cond(t) {
			return t, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return t, false
		}
	}
}

// Page returns, in ID order, up to limit tools (all with limit 0) whose ID sorts after
// after and that filter keeps (nil keeps all), and whether more remain.
func (ts *Tools) Page(after string, limit int, filter func(*Tool) bool) (page []*Tool, more bool) {
	ts.mu.RLock()
	all := make([]*Tool, 0, len(ts.byID))
	for _, t := range ts.byID {
		if t.ID > after && (filter == nil || filter(t)) {
			all = append(all, t)
		}
	}
	ts.mu.RUnlock()
	slices.SortFunc(all, func(a, b *Tool) int { return strings.Compare(a.ID, b.ID) })
	if limit > 0 && len(all) > limit {
		return all[:limit], true
	}
	return all, false
}

// Forget removes a ToolRegistration (an informer's delete).
func (ts *Tools) Forget(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	reg, ok := obj.(*ltiv1.ToolRegistration)
	if !ok {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old := ts.byID[reg.Name]; old != nil && old.UID == reg.UID {
		ts.unindex(old)
		delete(ts.byID, reg.Name)
		ts.notify()
	}
}

// unindex drops t from the client index and elects the oldest peer; the caller holds ts.mu.
func (ts *Tools) unindex(t *Tool) {
	if ts.byClient[t.ClientID] != t {
		return
	}
	delete(ts.byClient, t.ClientID)
	for _, peer := range ts.byID {
		if peer != t && peer.ClientID == t.ClientID {
			if cur := ts.byClient[t.ClientID]; cur == nil || olderTool(peer, cur) {
				ts.byClient[t.ClientID] = peer
			}
		}
	}
}

func olderTool(a, b *Tool) bool { return registration.Older(a.Created, a.ID, b.Created, b.ID) }

// ToolKey returns the key of tool t with the given kid: its static key, or one from its
// key set (fetched and cached like the platforms' key sets).
func (pk *PeerKeys) ToolKey(ctx context.Context, t *Tool, kid string) (*rsa.PublicKey, error) {
	return pk.keyOf(ctx, t.Source, t.ID, t.Spec.AuthConfig, &t.static, kid)
}
