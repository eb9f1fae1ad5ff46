package onboarding_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
	"github.com/ltiop/ltiop/webserver/handlers/onboarding"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// freshClientIDs makes the platform answer every registration with a new client_id, as an
// attacker's platform would to make ltiop write one registration per call. It returns the
// number of registrations the platform received.
func freshClientIDs(h *harness) *atomic.Int64 {
	var n atomic.Int64
	h.interceptLMS(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != "POST" || r.URL.Path != lmssim.RegisterPath {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"client_id":"flood-%d"}`, n.Add(1))
		return true
	})
	return &n
}

func bounded(maxPending int) func(*harnessConfig) {
	return func(c *harnessConfig) { c.opts.MaxPending = maxPending }
}

// Issue #13 §1: /lti/register needs no credential, so a loop of registrations with fresh
// client_ids must stop at maxPending registrations awaiting activation: the next call
// answers 429, sends nothing to the platform and writes nothing.
func TestRegisterFloodStopsAtPendingBound(t *testing.T) {
	h := newHarness(t, bounded(3))
	received := freshClientIDs(h)
	start := h.start() // one token: the simulator keeps its configuration readable with it
	for i := range 3 {
		if res := h.open(start, true); res.Status != http.StatusOK {
			t.Fatalf("registration %d: %d %s", i, res.Status, res.Body)
		}
	}
	// The registry (the informer) has not shown the writes yet: they count all the same.
	for range 2 {
		res := h.open(start, true)
		desc := testhttp.WantRefusal(t, res, http.StatusTooManyRequests, onboarding.CodeTooManyPending)
		if !strings.Contains(desc, "3") {
			t.Fatalf("description %q does not name the bound", desc)
		}
		testhttp.WantRefusal(t, h.open(start, false), http.StatusTooManyRequests, onboarding.CodeTooManyPending)
	}
	stored := h.stored()
	if len(stored) != 3 || received.Load() != 3 {
		t.Fatalf("stored %d registrations, the platform received %d; want 3 and 3", len(stored), received.Load())
	}
	for _, pr := range stored {
		if pr.Labels[ltiv1.LabelOrigin] != ltiv1.OriginDynamicRegistration || pr.Spec.IsActive() {
			t.Fatalf("registration %s: labels %v, active %v", pr.Name, pr.Labels, pr.Spec.IsActive())
		}
		h.show(&pr)
	}
	// Once the registry shows them, the count comes from it: still full.
	testhttp.WantRefusal(t, h.open(start, true), http.StatusTooManyRequests, onboarding.CodeTooManyPending)

	// Activating one (the operator's decision) frees a place.
	activated := stored[0].DeepCopy()
	activated.Spec.Active = ptr.To(true)
	activated.Status.FirstActivated = ptr.To(metav1.Now())
	h.show(activated)
	if res := h.open(start, true); res.Status != http.StatusOK {
		t.Fatalf("after an activation: %d %s", res.Status, res.Body)
	}
	if n := len(h.stored()); n != 4 {
		t.Fatalf("stored %d, want 4", n)
	}
}

// Concurrent calls cannot all pass the bound before any write shows.
func TestRegisterConcurrentFloodStopsAtPendingBound(t *testing.T) {
	h := newHarness(t, bounded(4))
	freshClientIDs(h)
	start := h.start()
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for range 12 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", start, nil)
			req.Header.Set("Accept", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_ = res.Body.Close()
			switch res.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("status %d", res.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := len(h.stored()); n != 4 || ok.Load() != 4 || refused.Load() != 8 {
		t.Fatalf("stored %d, %d accepted, %d refused; want 4, 4, 8", n, ok.Load(), refused.Load())
	}
}

// Registrations that are active at once (registrationAutoActivate) or updates of a known
// one are not pending; the bound counts what awaits activation only. With pre-approval,
// /lti/register writes nothing, and complete is bounded when it leaves the registration
// inactive.
func TestPreApprovedCompletionIsBoundedWhenLeftInactive(t *testing.T) {
	h := newHarness(t, bounded(1), func(c *harnessConfig) { c.opts.PreApprovalURL = "https://app.example/approve" })
	freshClientIDs(h)
	approve := func() string {
		res := h.open(h.start(), true)
		if res.Status != http.StatusSeeOther {
			t.Fatalf("register: %d %s", res.Status, res.Body)
		}
		return res.Header.Get("Location")[strings.Index(res.Header.Get("Location"), "registrationId=")+len("registrationId="):]
	}
	first, second, third := approve(), approve(), approve()
	if res := h.call("POST", "/api/registrations/"+first+"/complete", map[string]any{}); res.Status != http.StatusOK {
		t.Fatalf("complete: %d %s", res.Status, res.Body)
	}
	testhttp.WantRefusal(t, h.call("POST", "/api/registrations/"+second+"/complete", map[string]any{}),
		http.StatusTooManyRequests, onboarding.CodeTooManyPending)
	// Approved as active: not pending, so not bounded.
	if res := h.call("POST", "/api/registrations/"+third+"/complete", map[string]any{"autoActivate": true}); res.Status != http.StatusOK {
		t.Fatalf("complete active: %d %s", res.Status, res.Body)
	}
	if n := len(h.stored()); n != 2 {
		t.Fatalf("stored %d, want 2", n)
	}
}

// With requireToken, /lti/register refuses and only /lti/register/{token} registers; a
// wrong token writes nothing and sends nothing to the platform.
func TestRegisterWithoutTheRegistrationTokenIsRefused(t *testing.T) {
	const token = "registration-token-0123456789abcdefghij"
	key := httpapi.NewAPIKey("ltiop-registration-token", "token")
	key.Set(token)
	h := newHarness(t, func(c *harnessConfig) { c.opts.RegistrationToken = key })
	received := freshClientIDs(h)

	testhttp.WantRefusal(t, h.open(h.start(), true), http.StatusForbidden, "REGISTRATION_TOKEN_REQUIRED")
	for _, wrong := range []string{"wrong", token[:len(token)-1], token + "x", strings.ToUpper(token)} {
		res := h.open(h.lms.RegistrationStart(h.ltiop.URL+"/lti/register/"+wrong), true)
		testhttp.WantRefusal(t, res, http.StatusForbidden, "INVALID_REGISTRATION_TOKEN")
	}
	if n := len(h.stored()); n != 0 || received.Load() != 0 {
		t.Fatalf("refused registrations stored %d, sent %d", n, received.Load())
	}
	res := h.open(h.lms.RegistrationStart(h.ltiop.URL+"/lti/register/"+token), false)
	if res.Status != http.StatusOK || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("with the token: %d %v %s", res.Status, res.Header, res.Body)
	}
	if n := len(h.stored()); n != 1 {
		t.Fatalf("stored %d, want 1", n)
	}
}

// requireToken on without a usable token in the Secret: nothing registers, and the answer
// says the operator has to act.
func TestRegisterWithTokenRequiredButNotConfigured(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) {
		c.opts.RegistrationToken = httpapi.NewAPIKey("ltiop-registration-token", "token")
	})
	testhttp.WantRefusal(t, h.open(h.lms.RegistrationStart(h.ltiop.URL+"/lti/register/anything"), true),
		http.StatusServiceUnavailable, "REGISTRATION_TOKEN_NOT_CONFIGURED")
	if len(h.stored()) != 0 {
		t.Fatal("stored a registration")
	}
}

// Without requireToken, the token route does not exist.
func TestRegisterWithTokenWhenTokensAreOff(t *testing.T) {
	h := newHarness(t)
	testhttp.WantRefusal(t, h.open(h.lms.RegistrationStart(h.ltiop.URL+paths.Register+"/x"), true),
		http.StatusNotFound, httpapi.CodeNotFound)
	if len(h.stored()) != 0 {
		t.Fatal("stored a registration")
	}
}
