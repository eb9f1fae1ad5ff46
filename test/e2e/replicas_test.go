package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testnet"
)

// Two replicas with leader election, reaching the API server through a link the test cuts:
// losing the API server, and with it the lease, stops the controllers only.
var _ = Describe("Replicas", func() {
	It("keep serving launches while the API server is unreachable and the leader loses its lease; a new leader reconciles afterwards", func() {
		const ns = "replicas"
		createNamespace(ns)
		apiServer, err := url.Parse(restCfg.Host)
		Expect(err).NotTo(HaveOccurred())
		link, err := testnet.NewCutter(apiServer.Host)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(link.Close)
		viaLink := rest.CopyConfig(restCfg)
		viaLink.Host = "https://" + link.Addr()
		elect := func(c *config.Config) { c.LeaderElection, c.LaunchURL = true, launchURL }
		replicas := []*devInstance{startReplica(ns, viaLink, elect), startReplica(ns, viaLink, elect)}
		leaders := func() int {
			n := 0
			for _, r := range replicas {
				if r.Leading() {
					n++
				}
			}
			return n
		}
		Eventually(leaders).Should(Equal(1), "one replica runs the controllers")

		By("registering an LMS while the API server is there")
		lmsSrv := httptest.NewServer(nil)
		DeferCleanup(lmsSrv.Close)
		sim, err := lmssim.New(lmsSrv.URL, "replicas-client", "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		lmsSrv.Config.Handler = sim.Handler()
		reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms"}, Spec: simRegistration(sim, lmsSrv.URL)}
		Expect(k8s.Create(context.Background(), reg)).To(Succeed())
		for _, r := range replicas {
			Eventually(func() bool { p := r.Registry.Get(reg.Name); return p != nil && p.Ready && p.Key != nil }).Should(BeTrue())
		}
		launchAt := func(r *devInstance) launchResult {
			sim.ToolLoginURL, sim.ToolRedirectURI = r.URL+paths.Login, r.URL+paths.Launch
			b := newBrowser()
			res, err := b.client.Get(lmsSrv.URL + lmssim.StartPath)
			Expect(err).NotTo(HaveOccurred())
			return b.submit(readBody(res))
		}
		Expect(launchAt(replicas[0]).Ltik).NotTo(BeEmpty())

		By("cutting the API server off for longer than the renew deadline")
		link.Cut()
		Eventually(leaders, 40*time.Second).Should(Equal(0), "the leader stops its controllers once it cannot renew")
		for _, r := range replicas {
			Expect(r.stopped).NotTo(BeClosed(), "no replica exits")
			res, err := http.Get(r.Local + "/readyz")
			Expect(err).NotTo(HaveOccurred())
			res.Body.Close()
			Expect(res.StatusCode).To(Equal(200), "readiness does not depend on the API server")
			launched := launchAt(r)
			Expect(launched.Ltik).NotTo(BeEmpty(), "launches are served from the cache: %s", launched.Body)
			idToken := callAt(r.Local, "GET", "/api/idtoken", nil, map[string]string{"Authorization": "LTIK-AUTH-V2 " + apiKey + ":" + launched.Ltik})
			Expect(idToken.Status).To(Equal(200), string(idToken.Raw))
			Expect(callAt(r.Local, "GET", paths.Keys, nil, nil).Status).To(Equal(200))
			Expect(callAt(r.Local, "GET", paths.PlatformJWKS, nil, nil).Status).To(Equal(200))
		}

		By("giving the API server back")
		link.Restore()
		Eventually(leaders, 60*time.Second).Should(Equal(1), "a replica takes the lease again")
		later := reg.DeepCopy()
		later.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "lms-later"}
		later.Spec.ClientID = "replicas-client-later"
		Expect(k8s.Create(context.Background(), later)).To(Succeed())
		Eventually(func() bool {
			return meta.IsStatusConditionTrue(getReg(later).Status.Conditions, ltiv1.ConditionReady)
		}, 60*time.Second).Should(BeTrue(), "the new leader reconciles a registration created after the outage")
		for _, r := range replicas {
			Expect(r.stopped).NotTo(BeClosed())
		}
	})
})
