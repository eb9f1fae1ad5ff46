package keyring

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Use says what a Keyring does with its keys: their Kind (how the service Secret keeps
// them), how a key set is prepared for requests, and the name of the keyring in errors and
// logs. A Use has no state (its zero value is the one used), so that the zero Keyring is
// an empty keyring.
type Use[K Key, D any] interface {
	Kind[K]
	// Name prefixes the keyring's errors and names its logger ("sessions").
	Name() string
	// Prepare makes what requests need of a key set in rotation order (see Set).
	Prepare(sorted []K) (D, error)
}

// Keyring is a Ring that follows the service Secret: what the web server's sealing and
// signing keyrings share, embedded in each. It is safe for concurrent use, reads take no
// lock, and Replace swaps the whole key set atomically. The zero value is an empty keyring.
type Keyring[K Key, D any, U Use[K, D]] struct {
	ring Ring[K, D]
}

// Replace swaps in a new key set. Tokens made with a key that is not in keys are no longer
// taken. An empty key set is refused: keys are retired, never cleared.
func (k *Keyring[K, D, U]) Replace(keys []K) error {
	var u U
	if err := k.ring.Replace(keys, u.Prepare); err != nil {
		return fmt.Errorf("%s: %w", u.Name(), err)
	}
	return nil
}

// Attach makes the keyring follow its keys in the service Secret namespace/secretName
// through the cache's Secret informer (see Ring.Follow): keys that do not decode are logged
// and ignored, keeping the last good ones, and a deletion changes nothing, so the keys stay
// in use (tokens keep opening, ltiop keeps signing and its JWKS keeps the keys tools know)
// while the controller recreates the Secret.
//
// Call it before the manager starts, so the informer is part of its initial sync; the
// returned registration's HasSynced tells when the Secret (if it exists) has been read.
func (k *Keyring[K, D, U]) Attach(ctx context.Context, c cache.Cache, namespace, secretName string) (toolscache.ResourceEventHandlerRegistration, error) {
	var u U
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(u.Name()))
	return k.ring.Follow(ctx, c, namespace, secretName, u, u.Prepare)
}

// Ready reports whether the keyring holds a key to use.
func (k *Keyring[K, D, U]) Ready() bool { return k.ring.Load().Len() > 0 }

// IDs returns the ids of the keys held, in rotation order (the last active one is in use).
func (k *Keyring[K, D, U]) IDs() []string { return k.ring.Load().IDs() }

// Keys returns the key set k holds now, for the package that embeds k: a function, not a
// method, so that it is not promoted to that package's users (the set holds the keys).
func Keys[K Key, D any, U Use[K, D]](k *Keyring[K, D, U]) *Set[K, D] { return k.ring.Load() }
