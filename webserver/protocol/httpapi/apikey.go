package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// MinAPIKeyLength is the shortest API key accepted: the key is all that guards the
// integrator API, so it must not be guessable.
const MinAPIKeyLength = 32

// APIKey holds the integrator's API key, read from a Secret and kept current by an
// informer, so rotating the Secret takes effect without a restart.
type APIKey struct {
	secretName, dataKey string
	digest              atomic.Pointer[[sha256.Size]byte] // nil when no key is configured
	tooShort            atomic.Bool                       // the Secret holds a key shorter than MinAPIKeyLength
}

// NewAPIKey returns an APIKey read from data key dataKey of Secret secretName.
func NewAPIKey(secretName, dataKey string) *APIKey {
	return &APIKey{secretName: secretName, dataKey: dataKey}
}

// Attach follows the Secret through the informer of c, a cache that should hold only it.
func (k *APIKey) Attach(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("API key secret informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.update(obj) },
		UpdateFunc: func(_, obj any) { k.update(obj) },
		DeleteFunc: func(obj any) {
			if s, ok := obj.(*corev1.Secret); !ok || s.Name == k.secretName {
				k.digest.Store(nil)
				k.tooShort.Store(false)
			}
		},
	})
	return err
}

func (k *APIKey) update(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Name != k.secretName {
		return
	}
	key := strings.TrimSpace(string(s.Data[k.dataKey]))
	k.tooShort.Store(key != "" && len(key) < MinAPIKeyLength)
	if key == "" || len(key) < MinAPIKeyLength {
		if key != "" {
			// The same type follows the registration token: the message names the Secret, not a use.
			log.Log.WithName("apikey").Info("ignoring the key in the Secret: it is shorter than the minimum; what it guards stays closed until the Secret holds a longer one",
				"secret", k.secretName, "key", k.dataKey, "minLength", MinAPIKeyLength)
		}
		k.digest.Store(nil)
		return
	}
	d := sha256.Sum256([]byte(key))
	k.digest.Store(&d)
}

// Usable is false while the Secret holds a key too short to accept (readiness waits for a
// usable one). A missing key is usable in this sense: the LTI endpoints work without one.
func (k *APIKey) Usable() bool { return !k.tooShort.Load() }

// Waiting says what readiness waits for when the key is not usable.
func (k *APIKey) Waiting() string {
	return fmt.Sprintf("The API key in Secret %s (%q) is shorter than %d characters.", k.secretName, k.dataKey, MinAPIKeyLength)
}

// Set sets the key directly (tests and embedded use).
func (k *APIKey) Set(key string) {
	d := sha256.Sum256([]byte(key))
	k.digest.Store(&d)
}

// Check compares a presented key in constant time. Hashing first makes the comparison independent of
// where the strings differ and of their lengths.
func (k *APIKey) Check(presented string) *Error {
	want := k.digest.Load()
	if want == nil {
		return Errorf(http.StatusServiceUnavailable, CodeAPIKeyNotConfigured, fmt.Sprintf(
			"No API key is configured: create Secret %s with the key under %q.", k.secretName, k.dataKey))
	}
	got := sha256.Sum256([]byte(presented))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return Errorf(http.StatusUnauthorized, CodeInvalidAPIKey, "The API key is not valid.")
	}
	return nil
}

// RequireBearer admits requests with "Authorization: Bearer <API_KEY>".
func (k *APIKey) RequireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		credential, err := credential(r, "Bearer")
		if err == nil {
			err = k.Check(credential)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// credential returns the credential of the Authorization header for scheme, compared
// case-insensitively as RFC 9110 §11.1 says.
func credential(r *http.Request, scheme string) (string, *Error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", Errorf(http.StatusUnauthorized, CodeMissingAuthorization,
			"The Authorization header is missing; send Authorization: "+scheme+" <API_KEY>.")
	}
	got, rest, _ := strings.Cut(h, " ")
	if !strings.EqualFold(got, scheme) {
		return "", Errorf(http.StatusUnauthorized, CodeInvalidAuthScheme,
			fmt.Sprintf("The Authorization scheme must be %s for this endpoint.", scheme))
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return "", Errorf(http.StatusUnauthorized, CodeInvalidAPIKey, "The Authorization header carries no API key.")
	}
	return rest, nil
}
