package keyring

import "time"

// Kind is a kind of key the service Secret keeps: what code that handles every kind alike
// (Ring.Follow, and the controller that creates and rotates keys) needs of it.
type Kind[K Key] interface {
	// String names a set of these keys in logs and errors ("sealing keyring").
	String() string
	// DataKey is the service Secret data key the set is kept under.
	DataKey() string
	// NewKey generates a key that comes into use at now+activationDelay.
	NewKey(now time.Time, activationDelay time.Duration) (K, error)
	// Encode renders a non-empty set of valid keys, in rotation order, as the Secret keeps it.
	Encode(keys []K) ([]byte, error)
	// Decode reads what Encode writes, refusing anything but a non-empty set of valid keys
	// with distinct ids; the keys come back in rotation order. Its errors never quote the
	// data (it holds key material).
	Decode(data []byte) ([]K, error)
}
