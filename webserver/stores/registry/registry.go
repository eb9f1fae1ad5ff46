// Package registry is the web server's read side: an in-memory view of the
// PlatformRegistrations and their key Secrets, fed by the manager's informers. Lookups are
// map reads under a read lock: no API-server calls, no deep copies, no key parsing. The key
// sets it serves are built when keys change, never by a request (keysets.go).
package registry

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/outbound"
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
	// AwaitingActivation: written by dynamic registration and never active yet (no key,
	// counted against the pending bound).
	AwaitingActivation bool
	// SeenDeployments are the deployments recorded in status (learnt from launches).
	SeenDeployments []string
	// Health is status.launchHealth: the last launch and the last refusal, nil if none yet.
	Health *ltiv1.LaunchHealth
	// Key is the tool key the LMS trusts; nil until the controller has created it.
	Key *ToolKey
	// KeySetAlias also names the registration's key set (paths.KeySet): the name dynamic
	// registration gave its LMS when it re-registered an existing registration.
	KeySetAlias string
	// Source is who supplied its URLs (the origin label): its key set, token endpoint and
	// services are fetched under that source's outbound policy.
	Source outbound.Source

	// The public key PEM and kid the controller recorded in status: the PEM that
	// PublicKeyPEM answers while it names Key, shared with the informer's object.
	statusKID, statusPublicKey string

	// The platform's own key for JWK_KEY and RSA_KEY, parsed once per change.
	static staticKey
}

type issuerClient struct{ issuer, clientID string }

// Launchable says the registration is active, has a key and is Ready for its current
// generation: the login and the launch accept it.
func (p *Platform) Launchable() bool { return p.Spec.IsActive() && p.Ready && p.Key != nil }

// PublicKeyPEM is the tool key's public half as a PKIX PEM, "" while the registration has
// no key. It is the one the controller recorded in status when that names the same key
// (always, but for the moment between a new key and its status write), so that 10,000
// registrations do not hold a second copy of it; else it is marshalled now.
func (p *Platform) PublicKeyPEM() string {
	if p.Key == nil {
		return ""
	}
	if p.statusKID == p.Key.KID && p.statusPublicKey != "" {
		return p.statusPublicKey
	}
	private, err := keys.ParsePrivateKey(p.Key.pem)
	if err != nil {
		return "" // not reached: the key parsed when it was made
	}
	pemText, err := keys.PublicKeyPEM(&private.PublicKey)
	if err != nil {
		return ""
	}
	return pemText
}

// Registry holds the snapshots. The zero value is not usable; call New.
type Registry struct {
	mu        sync.RWMutex
	byID      map[string]*Platform
	byIssuer  map[issuerClient]*Platform // the oldest of each (url, clientId), as the controller decides
	peers     map[issuerClient][]*Platform
	clients   map[string]clientSet   // issuer -> its client ids, for logins without client_id
	byAlias   map[string]*Platform   // KeySetAlias -> registration
	keysByUID map[types.UID]*ToolKey // from Secrets, joined to registrations by owner UID
	idByUID   map[types.UID]string   // registration UID -> ID, to join a key without a scan
	secretUID map[string]types.UID   // Secret name -> owner UID, to forget keys of deleted Secrets
	changed   chan struct{}          // closed and replaced on every change
	awaiting  int                    // registrations with AwaitingActivation, kept by index/unindex

	all allKeys // /lti/keys, rebuilt in the background

	byName byName // the registrations in ID order, for lists and their pages

	legacy lti11Index // LTI 1.1 consumer keys and shared secrets (lti11.go)

	synced []toolscache.ResourceEventHandlerRegistration
}

// New returns an empty registry.
func New() *Registry {
	r := &Registry{
		byID:      map[string]*Platform{},
		byIssuer:  map[issuerClient]*Platform{},
		peers:     map[issuerClient][]*Platform{},
		clients:   map[string]clientSet{},
		byAlias:   map[string]*Platform{},
		keysByUID: map[types.UID]*ToolKey{},
		idByUID:   map[types.UID]string{},
		secretUID: map[string]types.UID{},
		changed:   make(chan struct{}),
	}
	r.all.init()
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
	clients := r.clients[issuer]
	out := make([]*Platform, 0, clients.len())
	clients.each(func(clientID string) { out = append(out, r.byIssuer[issuerClient{issuer, clientID}]) })
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

// AwaitingActivation counts the dynamic registrations never activated, the ones
// /lti/register may create only so many of.
func (r *Registry) AwaitingActivation() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.awaiting
}

// SourceOf says who supplied the URLs of a registration (a PlatformRegistration or a
// ToolRegistration): dynamic registration when its origin label says so, else the
// operator. They are fetched under that source's outbound policy.
func SourceOf(reg metav1.Object) outbound.Source {
	if reg.GetLabels()[ltiv1.LabelOrigin] == ltiv1.OriginDynamicRegistration {
		return outbound.SourceDynamicRegistration
	}
	return outbound.SourceOperator
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
		ID:                 reg.Name,
		Namespace:          reg.Namespace,
		UID:                reg.UID,
		Generation:         reg.Generation,
		ResourceVersion:    reg.ResourceVersion,
		Created:            reg.CreationTimestamp.Time,
		Spec:               *reg.Spec.DeepCopy(),
		SeenDeployments:    slices.Clone(reg.Status.DeploymentIDs),
		Health:             reg.Status.LaunchHealth.DeepCopy(),
		AwaitingActivation: reg.AwaitingActivation(),
		KeySetAlias:        reg.Annotations[ltiv1.AnnotationKeySetAlias],
		Source:             SourceOf(reg),
		statusKID:          reg.Status.KID,
		statusPublicKey:    reg.Status.PublicKey,
	}
	r.mu.RLock()
	if old := r.byID[p.ID]; old != nil {
		p.static = old.static
	}
	r.mu.RUnlock()
	p.static.parse(reg.Spec.AuthConfig)
	if c := meta.FindStatusCondition(reg.Status.Conditions, ltiv1.ConditionReady); c != nil {
		p.Ready = c.Status == "True" && c.ObservedGeneration == reg.Generation
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p.Key = r.keysByUID[p.UID]
	if old := r.byID[p.ID]; old != nil {
		r.unindex(old)
		delete(r.idByUID, old.UID)
	}
	r.byID[p.ID] = p
	r.idByUID[p.UID] = p.ID
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
		delete(r.idByUID, old.UID)
		r.notify()
	}
}

// ApplySecret records a key Secret; logf reports an unusable one.
func (r *Registry) ApplySecret(logf func(string, ...any), obj any) {
	secret, ok := obj.(*corev1.Secret)
	if ok && r.legacy.applySecret(secret) {
		return
	}
	if !ok || secret.Type != ltiv1.SecretTypeToolKey {
		return
	}
	owner := controllerUID(secret)
	if owner == "" {
		return
	}
	key, err := newToolKey(secret.Data[ltiv1.SecretKeyPrivateKey],
		secret.Data[ltiv1.SecretKeyNextPrivateKey], secret.Data[ltiv1.SecretKeyRetiringPrivateKey])
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
	r.forgetLTI11Secret(obj)
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
	if id, ok := r.idByUID[owner]; ok {
		p := r.byID[id]
		np := *p
		np.Key = key
		r.unindex(p)
		r.byID[id] = &np
		r.index(&np)
	}
	r.notify()
}

func (r *Registry) index(p *Platform) {
	r.byName.touch(p.ID)
	r.legacy.add(p)
	if p.AwaitingActivation {
		r.awaiting++
	}
	k := issuerClient{string(p.Spec.URL), p.Spec.ClientID}
	r.peers[k] = append(r.peers[k], p)
	r.clients[k.issuer] = r.clients[k.issuer].add(k.clientID)
	r.elect(k)
	if p.KeySetAlias != "" {
		r.byAlias[p.KeySetAlias] = p
	}
}

func (r *Registry) unindex(p *Platform) {
	r.byName.touch(p.ID)
	r.legacy.remove(p)
	if p.AwaitingActivation {
		r.awaiting--
	}
	k := issuerClient{string(p.Spec.URL), p.Spec.ClientID}
	r.peers[k] = slices.DeleteFunc(r.peers[k], func(q *Platform) bool { return q == p })
	if len(r.peers[k]) == 0 {
		delete(r.peers, k)
		if clients := r.clients[k.issuer].remove(k.clientID); clients.len() == 0 {
			delete(r.clients, k.issuer)
		} else {
			r.clients[k.issuer] = clients
		}
	}
	r.elect(k)
	if p.KeySetAlias != "" && r.byAlias[p.KeySetAlias] == p {
		delete(r.byAlias, p.KeySetAlias)
	}
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

// notify wakes WaitFor callers and has /lti/keys rebuilt; the caller holds r.mu.
func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
	r.all.changed(r)
}

// staticKey is the key a JWK_KEY or RSA_KEY registration holds in its spec, parsed.
type staticKey struct {
	from ltiv1.AuthConfig // what it was parsed from
	key  *rsa.PublicKey
	kid  string // the JWK's kid, if it has one: the token's kid must then match
	err  error
}

// parse makes k the key of ac. It parses only when ac differs from what k was parsed
// from: most updates of a registration are status (launch health once a minute per
// serving replica, conditions) and leave the key as it was.
func (k *staticKey) parse(ac ltiv1.AuthConfig) {
	if k.from == ac {
		return
	}
	*k = staticKey{from: ac}
	switch ac.Method {
	case ltiv1.AuthMethodRSAKey:
		k.key, k.err = keys.ParsePublicKeyPEM(ac.Key)
	case ltiv1.AuthMethodJWKKey:
		if k.key, k.err = keys.ParsePublicJWK(ac.Key); k.err == nil {
			var probe struct {
				KID string `json:"kid"`
			}
			_ = json.Unmarshal([]byte(ac.Key), &probe)
			k.kid = probe.KID
		}
	}
}

func controllerUID(secret *corev1.Secret) types.UID {
	for _, ref := range secret.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "PlatformRegistration" {
			return ref.UID
		}
	}
	return ""
}
