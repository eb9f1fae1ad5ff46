// Package registry is the web server's read side: an in-memory view of the
// PlatformRegistrations and their key Secrets, fed by the manager's informers. Lookups are
// map reads under a read lock: no API-server calls, no deep copies, no key parsing.
package registry

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/registration"
)

// Platform is an immutable snapshot of one registration joined with its tool key.
// Callers must not modify it; a change in the cluster publishes a new snapshot.
type Platform struct {
	// ID is the registration's metadata.name, the platform ID of the API.
	ID              string
	Namespace       string
	UID             types.UID
	Generation      int64
	ResourceVersion string
	Created         time.Time
	Spec            ltiv1.PlatformRegistrationSpec
	// Ready mirrors the Ready condition for the current generation.
	Ready bool
	// SeenDeployments are the deployments recorded in status (learnt from launches).
	SeenDeployments []string
	// Key is the tool key the LMS trusts; nil until the controller has created it.
	Key *ToolKey

	// The platform's own key for JWK_KEY and RSA_KEY, parsed once per change.
	staticKey    *rsa.PublicKey
	staticKID    string // the JWK's kid, if it has one: the token's kid must then match
	staticKeyErr error
}

// ToolKey is a registration's parsed private key, ready to sign.
type ToolKey struct {
	KID       string
	Private   *rsa.PrivateKey
	PublicPEM string
	public    jwk.Key
}

type issuerClient struct{ issuer, clientID string }

// Registry holds the snapshots. The zero value is not usable; call New.
type Registry struct {
	mu        sync.RWMutex
	byID      map[string]*Platform
	byIssuer  map[issuerClient]*Platform // the oldest of each (url, clientId), as the controller decides
	peers     map[issuerClient][]*Platform
	clients   map[string]map[string]struct{} // issuer -> its client ids, for logins without client_id
	keysByUID map[types.UID]*ToolKey         // from Secrets, joined to registrations by owner UID
	secretUID map[string]types.UID           // Secret name -> owner UID, to forget keys of deleted Secrets
	changed   chan struct{}                  // closed and replaced on every change

	jwksMu    sync.Mutex
	jwks      []byte // marshalled key set, rebuilt lazily after a change
	jwksDirty atomic.Bool

	byName byName // the registrations in ID order, for lists and their pages

	synced []toolscache.ResourceEventHandlerRegistration
}

// New returns an empty registry.
func New() *Registry {
	r := &Registry{
		byID:      map[string]*Platform{},
		byIssuer:  map[issuerClient]*Platform{},
		peers:     map[issuerClient][]*Platform{},
		clients:   map[string]map[string]struct{}{},
		keysByUID: map[types.UID]*ToolKey{},
		secretUID: map[string]types.UID{},
		changed:   make(chan struct{}),
	}
	r.jwksDirty.Store(true)
	return r
}

// Attach feeds the registry from the cache's PlatformRegistration and Secret informers.
// Call it before the manager starts so the informers are part of its initial sync.
func (r *Registry) Attach(ctx context.Context, c cache.Cache) error {
	regInformer, err := c.GetInformer(ctx, &ltiv1.PlatformRegistration{})
	if err != nil {
		return fmt.Errorf("platform registration informer: %w", err)
	}
	secretInformer, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("secret informer: %w", err)
	}
	logger := log.FromContext(ctx).WithName("registry")
	h1, err := regInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.Apply(obj) },
		UpdateFunc: func(_, obj any) { r.Apply(obj) },
		DeleteFunc: func(obj any) { r.Forget(obj) },
	})
	if err != nil {
		return err
	}
	h2, err := secretInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.ApplySecret(logger.Info, obj) },
		UpdateFunc: func(_, obj any) { r.ApplySecret(logger.Info, obj) },
		DeleteFunc: func(obj any) { r.ForgetSecret(obj) },
	})
	if err != nil {
		return err
	}
	r.synced = []toolscache.ResourceEventHandlerRegistration{h1, h2}
	return nil
}

// HasSynced reports whether the initial lists of both informers have been loaded.
func (r *Registry) HasSynced() bool {
	if len(r.synced) == 0 {
		return false
	}
	for _, h := range r.synced {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

// Lookup returns the registration in use for (issuer, clientID), or nil.
func (r *Registry) Lookup(issuer, clientID string) *Platform {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byIssuer[issuerClient{issuer, clientID}]
}

// ByIssuer returns the registration in use for each client of issuer (login initiation
// without client_id, T-LOGIN-03), without scanning the others.
func (r *Registry) ByIssuer(issuer string) []*Platform {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Platform, 0, len(r.clients[issuer]))
	for clientID := range r.clients[issuer] {
		out = append(out, r.byIssuer[issuerClient{issuer, clientID}])
	}
	return out
}

// Get returns the registration with the given ID (metadata.name), or nil.
func (r *Registry) Get(id string) *Platform {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

// List returns the registrations that match filter (nil matches all), sorted by ID.
func (r *Registry) List(filter func(*Platform) bool) []*Platform {
	out, _ := r.Page("", 0, filter)
	return out
}

// WaitFor waits until the registration id satisfies cond, or ctx ends. It returns the last
// snapshot seen (nil if none) and whether cond held.
func (r *Registry) WaitFor(ctx context.Context, id string, cond func(*Platform) bool) (*Platform, bool) {
	for {
		r.mu.RLock()
		p, changed := r.byID[id], r.changed
		r.mu.RUnlock()
		if cond(p) {
			return p, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return p, false
		}
	}
}

// JWKS returns the marshalled key set of every registration's tool key. The bytes are
// shared: callers must not modify them.
func (r *Registry) JWKS() []byte {
	r.jwksMu.Lock()
	defer r.jwksMu.Unlock()
	if !r.jwksDirty.Load() {
		return r.jwks
	}
	r.mu.RLock()
	r.jwksDirty.Store(false) // a change after this point marks it dirty again
	var ks []*ToolKey
	for _, p := range r.byID {
		if p.Key != nil {
			ks = append(ks, p.Key)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(ks, func(a, b *ToolKey) int { return strings.Compare(a.KID, b.KID) })
	set := struct {
		Keys []jwk.Key `json:"keys"`
	}{Keys: make([]jwk.Key, 0, len(ks))}
	for _, k := range ks {
		set.Keys = append(set.Keys, k.public)
	}
	b, err := json.Marshal(set)
	if err != nil { // jwk keys we built ourselves always marshal
		panic(fmt.Sprintf("marshalling JWKS: %v", err))
	}
	r.jwks = b
	return b
}

// ---- informer callbacks ----

// Apply records a PlatformRegistration (an informer's add or update). Exported so the
// registry can also be fed without Kubernetes (benchmarks, embedded use).
func (r *Registry) Apply(obj any) {
	reg, ok := obj.(*ltiv1.PlatformRegistration)
	if !ok {
		return
	}
	p := &Platform{
		ID:              reg.Name,
		Namespace:       reg.Namespace,
		UID:             reg.UID,
		Generation:      reg.Generation,
		ResourceVersion: reg.ResourceVersion,
		Created:         reg.CreationTimestamp.Time,
		Spec:            *reg.Spec.DeepCopy(),
		SeenDeployments: slices.Clone(reg.Status.DeploymentIDs),
	}
	p.staticKey, p.staticKID, p.staticKeyErr = parseStaticKey(reg.Spec.AuthConfig)
	if c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionReady); c != nil {
		p.Ready = c.Status == "True" && c.ObservedGeneration == reg.Generation
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Key = r.keysByUID[p.UID]
	if old := r.byID[p.ID]; old != nil {
		r.unindex(old)
	}
	r.byID[p.ID] = p
	r.index(p)
	r.notify()
}

// Forget removes a PlatformRegistration (an informer's delete).
func (r *Registry) Forget(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	reg, ok := obj.(*ltiv1.PlatformRegistration)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.byID[reg.Name]; old != nil && old.UID == reg.UID {
		r.unindex(old)
		delete(r.byID, reg.Name)
		r.notify()
	}
}

// ApplySecret records a key Secret; logf reports an unusable one.
func (r *Registry) ApplySecret(logf func(string, ...any), obj any) {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Type != ltiv1.SecretTypeToolKey {
		return
	}
	owner := controllerUID(secret)
	if owner == "" {
		return
	}
	private, err := keys.ParsePrivateKey(secret.Data[ltiv1.SecretKeyPrivateKey])
	var key *ToolKey
	if err == nil {
		key, err = newToolKey(private)
	}
	if err != nil {
		// The controller replaces an unreadable key; until then the registration has none.
		logf("key Secret holds no usable key", "secret", secret.Name, "reason", err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secretUID[secret.Name] = owner
	r.setKey(owner, key)
}

// ForgetSecret removes a key Secret's key.
func (r *Registry) ForgetSecret(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if owner, ok := r.secretUID[secret.Name]; ok {
		delete(r.secretUID, secret.Name)
		r.setKey(owner, nil)
	}
}

// setKey records the key of the registration with the given UID and republishes it.
func (r *Registry) setKey(owner types.UID, key *ToolKey) {
	if key == nil {
		delete(r.keysByUID, owner)
	} else {
		r.keysByUID[owner] = key
	}
	for id, p := range r.byID {
		if p.UID == owner {
			np := *p
			np.Key = key
			r.unindex(p)
			r.byID[id] = &np
			r.index(&np)
		}
	}
	r.notify()
}

func (r *Registry) index(p *Platform) {
	r.byName.touch(p.ID)
	k := issuerClient{string(p.Spec.URL), p.Spec.ClientID}
	r.peers[k] = append(r.peers[k], p)
	if r.clients[k.issuer] == nil {
		r.clients[k.issuer] = map[string]struct{}{}
	}
	r.clients[k.issuer][k.clientID] = struct{}{}
	r.elect(k)
}

func (r *Registry) unindex(p *Platform) {
	r.byName.touch(p.ID)
	k := issuerClient{string(p.Spec.URL), p.Spec.ClientID}
	r.peers[k] = slices.DeleteFunc(r.peers[k], func(q *Platform) bool { return q == p })
	if len(r.peers[k]) == 0 {
		delete(r.peers, k)
		delete(r.clients[k.issuer], k.clientID)
		if len(r.clients[k.issuer]) == 0 {
			delete(r.clients, k.issuer)
		}
	}
	r.elect(k)
}

// elect makes the oldest registration of a (url, clientId) the one lookups return,
// the same choice the controller makes when it marks the others as duplicates.
func (r *Registry) elect(k issuerClient) {
	var winner *Platform
	for _, p := range r.peers[k] {
		if winner == nil || older(p, winner) {
			winner = p
		}
	}
	if winner == nil {
		delete(r.byIssuer, k)
	} else {
		r.byIssuer[k] = winner
	}
}

func older(a, b *Platform) bool { return registration.Older(a.Created, a.ID, b.Created, b.ID) }

// notify wakes WaitFor callers and marks the JWKS for rebuilding; the caller holds r.mu.
func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
	r.jwksDirty.Store(true)
}

// parseStaticKey parses the platform key of JWK_KEY and RSA_KEY registrations.
func parseStaticKey(ac ltiv1.AuthConfig) (*rsa.PublicKey, string, error) {
	switch ac.Method {
	case ltiv1.AuthMethodRSAKey:
		k, err := keys.ParsePublicKeyPEM(ac.Key)
		return k, "", err
	case ltiv1.AuthMethodJWKKey:
		k, err := keys.ParsePublicJWK(ac.Key)
		if err != nil {
			return nil, "", err
		}
		var probe struct {
			KID string `json:"kid"`
		}
		_ = json.Unmarshal([]byte(ac.Key), &probe)
		return k, probe.KID, nil
	}
	return nil, "", nil
}

func controllerUID(secret *corev1.Secret) types.UID {
	for _, ref := range secret.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "PlatformRegistration" {
			return ref.UID
		}
	}
	return ""
}

func newToolKey(private *rsa.PrivateKey) (*ToolKey, error) {
	kid, err := keys.KID(&private.PublicKey)
	if err != nil {
		return nil, err
	}
	publicPEM, err := keys.PublicKeyPEM(&private.PublicKey)
	if err != nil {
		return nil, err
	}
	public, err := keys.PublicJWK(&private.PublicKey, kid)
	if err != nil {
		return nil, err
	}
	return &ToolKey{KID: kid, Private: private, PublicPEM: publicPEM, public: public}, nil
}
