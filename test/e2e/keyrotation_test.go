package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
)

// A rotation of a registration's tool key seen by an LMS that caches the key set (it never
// fetches it on an unknown kid, only on its own schedule), with two replicas and the leader
// stopped and replaced mid-rotation: what either replica signs, before, during and after
// the switch, verifies at the LMS.
var _ = Describe("Tool-key rotation", func() {
	It("publishes the next key before it signs and keeps the old one after, across replicas and a restart of the leader", func() {
		const ns = "keyrotation"
		createNamespace(ns)
		ctx := context.Background()
		elect := func(c *config.Config) {
			c.LeaderElection, c.LaunchURL, c.DeepLinkingURL = true, launchURL, deepLinkingURL
		}
		replicas := []*devInstance{startReplica(ns, restCfg, elect), startReplica(ns, restCfg, elect)}
		leader := func() *devInstance {
			for _, r := range replicas {
				if r.Leading() {
					return r
				}
			}
			return nil
		}
		Eventually(leader).ShouldNot(BeNil())

		lmsSrv := httptest.NewServer(nil)
		DeferCleanup(lmsSrv.Close)
		sim, err := lmssim.New(lmsSrv.URL, "rotation-client", "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		sim.CacheToolKeys = true
		lmsSrv.Config.Handler = sim.Handler()
		reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms"}, Spec: simRegistration(sim, lmsSrv.URL)}
		// Long enough to stop the leader and let another replica take over while the next
		// key is only published; the steps are awaited, not slept through.
		reg.Spec.KeyRotation = &ltiv1.KeyRotation{PublishAhead: &metav1.Duration{Duration: 20 * time.Second},
			GracePeriod: &metav1.Duration{Duration: 10 * time.Second}, LMSKeySource: ltiv1.LMSKeySourceKeySetURL}
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		sim.EnableServices(replicas[0].Local + paths.KeySet(reg.Name))
		current := func() *ltiv1.PlatformRegistration {
			out := &ltiv1.PlatformRegistration{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), out)).To(Succeed())
			return out
		}
		for _, r := range replicas {
			Eventually(func() bool { p := r.Registry.Get(reg.Name); return p != nil && p.Ready && p.Key != nil }).Should(BeTrue())
		}
		first := current().Status.KID

		// signAt has replica r sign a deep-linking response; it returns the JWT and its kid.
		signAt := func(r *devInstance) (jwt, kid string) {
			sim.ToolLoginURL, sim.ToolRedirectURI = r.URL+paths.Login, r.URL+paths.Launch
			b := newBrowser()
			res, err := b.client.Get(lmsSrv.URL + lmssim.StartPath + "?message=LtiDeepLinkingRequest")
			Expect(err).NotTo(HaveOccurred())
			ltik := b.submit(readBody(res)).Ltik
			Expect(ltik).NotTo(BeEmpty())
			form := callAt(r.Local, "POST", "/api/deeplinking/form", map[string]any{"contentItems": []any{}}, ltikAuth(ltik))
			Expect(form.Status).To(Equal(200), string(form.Raw))
			jwt = regexpFind(form.JSON["form"].(string), `name="JWT" value="([^"]*)"`)
			header, err := base64.RawURLEncoding.DecodeString(strings.Split(jwt, ".")[0])
			Expect(err).NotTo(HaveOccurred())
			var h struct{ Kid string }
			Expect(json.Unmarshal(header, &h)).To(Succeed())
			return jwt, h.Kid
		}
		// accepted is the LMS's answer to jwt, which it verifies with the keys it has cached.
		accepted := func(jwt string) string {
			res, err := http.PostForm(lmsSrv.URL+lmssim.DeepLinkReturnPath+"?"+lmssim.DeepLinkReturnQuery, url.Values{"JWT": {jwt}})
			Expect(err).NotTo(HaveOccurred())
			body := readBody(res)
			return http.StatusText(res.StatusCode) + ": " + body
		}
		const ok = "OK: "
		keySetKIDs := func(r *devInstance) []string {
			res := callAt(r.Local, "GET", paths.KeySet(reg.Name), nil, nil)
			Expect(res.Status).To(Equal(200))
			var kids []string
			for _, k := range res.JSON["keys"].([]any) {
				kids = append(kids, k.(map[string]any)["kid"].(string))
			}
			return kids
		}

		By("the LMS caching the key set, and both replicas signing with the first key")
		Expect(sim.RefreshToolKeys(ctx)).To(Equal([]string{first}))
		for _, r := range replicas {
			jwt, kid := signAt(r)
			Expect(kid).To(Equal(first))
			Expect(accepted(jwt)).To(HavePrefix(ok))
		}

		By("asking for a rotation: the next key is published by both replicas and signs nothing yet")
		// The replicas write the registration's status meanwhile (launch health): retry on
		// conflict, as a person's kubectl annotate would.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			req := current()
			req.Annotations = map[string]string{ltiv1.AnnotationRotateKey: "2026-11-29"}
			return k8s.Update(ctx, req)
		})).To(Succeed())
		Eventually(func() *ltiv1.ToolKeyStatus { return current().Status.KeyRotation.Next }).ShouldNot(BeNil())
		next := current().Status.KeyRotation.Next.KID
		for _, r := range replicas {
			Eventually(func() []string { return keySetKIDs(r) }).Should(Equal([]string{first, next}))
			_, kid := signAt(r)
			Expect(kid).To(Equal(first), "the next key does not sign before its time")
		}
		Expect(sim.RefreshToolKeys(ctx)).To(ConsistOf(first, next), "the LMS's scheduled refresh learns the next key")
		beforeSwitch, kid := signAt(replicas[1])
		Expect(kid).To(Equal(first))

		By("stopping the leader mid-rotation and starting a new replica")
		old := leader()
		old.stop()
		kept := []*devInstance{}
		for _, r := range replicas {
			if r != old {
				kept = append(kept, r)
			}
		}
		replicas = append(kept, startReplica(ns, restCfg, elect))
		sim.EnableServices(replicas[0].Local + paths.KeySet(reg.Name))
		Expect(sim.RefreshToolKeys(ctx)).To(ConsistOf(first, next))
		Eventually(leader, 30*time.Second).ShouldNot(BeNil(), "another replica takes over the controllers")
		Expect(current().Status.KID).To(Equal(first), "the switch has not happened while no replica led")

		By("switching at the next key's time: every replica signs with it and the LMS verifies from its cache")
		Eventually(func() string { return current().Status.KID }, 40*time.Second).Should(Equal(next))
		for _, r := range replicas {
			Eventually(func() string { return r.Registry.Get(reg.Name).Key.KID }).Should(Equal(next))
			jwt, kid := signAt(r)
			Expect(kid).To(Equal(next))
			Expect(accepted(jwt)).To(HavePrefix(ok))
			Expect(keySetKIDs(r)).To(Equal([]string{next, first}), "the old key is still published")
		}
		Expect(accepted(beforeSwitch)).To(HavePrefix(ok), "a response signed just before the switch still verifies")

		By("dropping the old key after the grace period")
		Eventually(func() *ltiv1.ToolKeyStatus { return current().Status.KeyRotation.Retiring }, 30*time.Second).Should(BeNil())
		for _, r := range replicas {
			Eventually(func() []string { return keySetKIDs(r) }).Should(Equal([]string{next}))
		}
		Expect(current().Status.KeyRotation.LastRequest).To(Equal("2026-11-29"))
	})
})
