package registry

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// lti11Index finds registrations by LTI 1.1 consumer key and holds the shared secrets they
// reference. The secrets come from the same label-selected Secret cache as the tool keys
// (app.kubernetes.io/managed-by=ltiop), so a 1.1 launch reads no API server. Only Secrets
// that are neither tool keys nor the service Secret are kept: in practice the ones an
// administrator labelled for this.
type lti11Index struct {
	mu      sync.RWMutex
	byKey   map[string][]*Platform
	secrets map[string]map[string][]byte // Secret name -> its data (the informer's, never modified)
}

func (x *lti11Index) add(p *Platform) {
	if p.Spec.LTI11 == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byKey == nil {
		x.byKey = map[string][]*Platform{}
	}
	k := p.Spec.LTI11.ConsumerKey
	x.byKey[k] = append(x.byKey[k], p)
}

func (x *lti11Index) remove(p *Platform) {
	if p.Spec.LTI11 == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := p.Spec.LTI11.ConsumerKey
	list := x.byKey[k]
	for i, q := range list {
		if q == p {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.byKey, k)
	} else {
		x.byKey[k] = list
	}
}

// applySecret records a Secret that may hold a 1.1 shared secret; false for the kinds the
// registry reads otherwise.
func (x *lti11Index) applySecret(s *corev1.Secret) bool {
	if s.Type == ltiv1.SecretTypeToolKey || s.Type == ltiv1.SecretTypeService {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.secrets == nil {
		x.secrets = map[string]map[string][]byte{}
	}
	x.secrets[s.Name] = s.Data
	return true
}

func (x *lti11Index) forgetSecret(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.secrets, name)
}

// ConsumerKeyHolders returns the registrations holding LTI 1.1 consumer key key, active or
// not, in ID order. More than one is a conflict a launch cannot settle (LTI11-KEY-03): a 1.1
// launch names nothing but the key, so none of them is chosen.
func (r *Registry) ConsumerKeyHolders(key string) []*Platform {
	r.legacy.mu.RLock()
	holders := slices.Clone(r.legacy.byKey[key])
	r.legacy.mu.RUnlock()
	slices.SortFunc(holders, func(a, b *Platform) int { return strings.Compare(a.ID, b.ID) })
	return holders
}

// ConsumerKeyHolder returns a registration other than except (an id) holding LTI 1.1
// consumer key key, active or not, or nil: the API refuses a second holder.
func (r *Registry) ConsumerKeyHolder(key, except string) *Platform {
	r.legacy.mu.RLock()
	defer r.legacy.mu.RUnlock()
	for _, p := range r.legacy.byKey[key] {
		if p.ID != except {
			return p
		}
	}
	return nil
}

// LTI11Secret returns p's LTI 1.1 shared secret from the cache; false when p has no 1.1
// credentials or the Secret (or its key) is not there.
func (r *Registry) LTI11Secret(p *Platform) (string, bool) {
	if p == nil || p.Spec.LTI11 == nil {
		return "", false
	}
	ref := p.Spec.LTI11.SharedSecret
	r.legacy.mu.RLock()
	defer r.legacy.mu.RUnlock()
	v := r.legacy.secrets[ref.Name][ref.SecretKey()]
	return string(v), len(v) > 0
}

// forgetLTI11Secret is ForgetSecret's part for 1.1 secrets.
func (r *Registry) forgetLTI11Secret(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if s, ok := obj.(*corev1.Secret); ok {
		r.legacy.forgetSecret(s.Name)
	}
}
