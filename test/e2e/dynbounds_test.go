package e2e

import (
	"context"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// Issue #13 §1: /lti/register needs no credential, so what it writes is bounded. A whole
// ltiop (API server, controller, informers, web server) with a registration token and a
// bound of two.
var _ = Describe("Dynamic registration bounds", Ordered, func() {
	const token = "e2e-registration-token-0123456789abcdef"
	var ltiop *devInstance
	ctx := context.Background()
	BeforeAll(func() {
		ltiop = startDevInstance("ltiop-dynbounds", func(c *config.Config) {
			c.OutboundAllowLoopback = true
			c.DynamicRegistration.MaxPending = 2
			c.DynamicRegistration.RequireToken = true
		})
	})
	registerAt := func(path, clientID string) (*lmssim.LMS, *http.Response, string) {
		sim, _ := drLMS(lmssim.DeploymentTopLevel, clientID)
		req, err := http.NewRequest("GET", sim.RegistrationStart(ltiop.Local+path), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json")
		res, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		return sim, res, readBody(res)
	}
	kids := func() string { return string(callAt(ltiop.Local, "GET", "/lti/keys", nil, nil).Raw) }

	It("refuses /lti/register and unknown tokens when a token is required, writing nothing", func() {
		sim, res, body := registerAt("/lti/register", "bounds-no-token")
		Expect(res.StatusCode).To(Equal(http.StatusForbidden), body)
		Expect(body).To(ContainSubstring("REGISTRATION_TOKEN_REQUIRED"))
		// The token Secret does not exist yet.
		_, res, body = registerAt("/lti/register/"+token, "bounds-no-secret")
		Expect(res.StatusCode).To(Equal(http.StatusServiceUnavailable), body)
		Expect(body).To(ContainSubstring("REGISTRATION_TOKEN_NOT_CONFIGURED"))

		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: "ltiop-registration-token"},
			StringData: map[string]string{"token": token}})).To(Succeed())
		Eventually(func() string { _, _, body := registerAt("/lti/register/wrong", "bounds-wrong"); return body }).
			Should(ContainSubstring("INVALID_REGISTRATION_TOKEN"))
		Expect(sim.Registrations()).To(BeEmpty())
		Expect(registrationsOf(ltiop.Namespace)).To(BeEmpty())
	})

	It("registers with the token, makes no key until activation, and stops at the pending bound", func() {
		var names []string
		for _, id := range []string{"bounds-1", "bounds-2"} {
			_, res, body := registerAt("/lti/register/"+token, id)
			Expect(res.StatusCode).To(Equal(http.StatusOK), body)
		}
		for _, r := range registrationsOf(ltiop.Namespace) {
			Expect(r.Labels).To(HaveKeyWithValue(ltiv1.LabelOrigin, ltiv1.OriginDynamicRegistration))
			names = append(names, r.Name)
			Eventually(func() string {
				c := meta.FindStatusCondition(getReg(&r).Status.Conditions, ltiv1.ConditionReady)
				if c == nil {
					return ""
				}
				return c.Reason
			}).Should(Equal(ltiv1.ReasonAwaitingActivation))
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ltiop.Namespace, Name: controllers.KeySecretName(r.Name)}, &corev1.Secret{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no key Secret before activation")
		}
		Expect(names).To(HaveLen(2))
		Expect(kids()).To(Equal(`{"keys":[]}`))

		// The flood: the third is refused before anything is sent or written.
		sim, res, body := registerAt("/lti/register/"+token, "bounds-3")
		Expect(res.StatusCode).To(Equal(http.StatusTooManyRequests), body)
		Expect(body).To(ContainSubstring("TOO_MANY_PENDING_REGISTRATIONS"))
		Expect(sim.Registrations()).To(BeEmpty())
		Expect(registrationsOf(ltiop.Namespace)).To(HaveLen(2))

		// Activating one makes its key, publishes it, and frees a place.
		Expect(callAt(ltiop.Local, "POST", "/api/platforms/"+names[0]+"/activate", nil, bearer).Status).To(Equal(200))
		var kid string
		Eventually(func() string {
			kid = getReg(&ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ltiop.Namespace, Name: names[0]}}).Status.KID
			return kid
		}).ShouldNot(BeEmpty())
		Eventually(kids).Should(ContainSubstring(kid))
		Eventually(func() int {
			_, res, _ := registerAt("/lti/register/"+token, "bounds-4")
			return res.StatusCode
		}).Should(Equal(http.StatusOK))

		// Deactivated, it keeps its key (it was activated once) but leaves the key set.
		Expect(callAt(ltiop.Local, "POST", "/api/platforms/"+names[0]+"/deactivate", nil, bearer).Status).To(Equal(200))
		Eventually(kids).ShouldNot(ContainSubstring(kid))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ltiop.Namespace, Name: controllers.KeySecretName(names[0])}, &corev1.Secret{})
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(kids(), `"kid"`)).To(Equal(0))
	})
})
