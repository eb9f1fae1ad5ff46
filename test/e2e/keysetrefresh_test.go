package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
	"github.com/ltiop/ltiop/webserver/protocol/ltiplatform"
)

// withdrawableKeySet is a peer's key set on loopback, cacheable for a day, from which the
// peer can withdraw every key (as after a compromise).
type withdrawableKeySet struct {
	srv       *httptest.Server
	jwks      atomic.Pointer[[]byte]
	withdrawn atomic.Bool
}

func newWithdrawableKeySet() *withdrawableKeySet {
	ks := &withdrawableKeySet{}
	ks.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=86400")
		if ks.withdrawn.Load() || ks.jwks.Load() == nil {
			_, _ = w.Write([]byte(`{"keys":[]}`))
			return
		}
		_, _ = w.Write(*ks.jwks.Load())
	}))
	DeferCleanup(ks.srv.Close)
	return ks
}

// annotateRefresh sets the refresh annotation as `kubectl annotate --overwrite` does: a merge
// patch of the metadata alone, which the replicas' status writes cannot conflict with.
func annotateRefresh(ctx context.Context, obj client.Object, value string) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{ltiv1.AnnotationRefreshKeySet: value}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

var _ = Describe("Dropping a peer's cached key set (annotation lti.ltiop.dev/refresh-key-set)", func() {
	It("refuses, on every replica, a launch signed with a key the LMS withdrew as soon as the registration is annotated, where each replica's cache accepted it before", func() {
		const ns = "keyset-refresh"
		createNamespace(ns)
		ctx := context.Background()
		elect := func(c *config.Config) { c.LeaderElection, c.LaunchURL = true, launchURL }
		replicas := []*devInstance{startReplica(ns, restCfg, elect), startReplica(ns, restCfg, elect)}

		lmsSrv := httptest.NewServer(nil)
		DeferCleanup(lmsSrv.Close)
		sim, err := lmssim.New(lmsSrv.URL, "refresh-client", "deployment-1")
		Expect(err).NotTo(HaveOccurred())
		lmsSrv.Config.Handler = sim.Handler()
		keySet := newWithdrawableKeySet()
		res, err := http.Get(lmsSrv.URL + lmssim.JWKSPath)
		Expect(err).NotTo(HaveOccurred())
		own, err := io.ReadAll(res.Body)
		res.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		keySet.jwks.Store(&own)
		reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms"}, Spec: simRegistration(sim, lmsSrv.URL)}
		reg.Spec.AuthConfig.Key = keySet.srv.URL + "/jwks"
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		for _, r := range replicas {
			Eventually(func() bool { p := r.Registry.Get(reg.Name); return p != nil && p.Ready && p.Key != nil }).Should(BeTrue())
		}
		lms := &lmsServer{LMS: sim, URL: lmsSrv.URL, ID: reg.Name}
		launchAt := func(r *devInstance) launchResult {
			sim.ToolLoginURL, sim.ToolRedirectURI = r.URL+paths.Login, r.URL+paths.Launch
			return newBrowser().launch(lms, "")
		}
		for _, r := range replicas {
			Expect(launchAt(r).Ltik).NotTo(BeEmpty(), "each replica fetches the LMS's key set and caches it")
		}

		By("the LMS withdraws its key: each replica's cached set still holds it for a day")
		keySet.withdrawn.Store(true)
		for _, r := range replicas {
			Expect(launchAt(r).Ltik).NotTo(BeEmpty(), "accepted from the cache")
		}

		By("annotating the registration")
		annotateRefresh(ctx, reg, "incident-42")
		for _, r := range replicas {
			Eventually(func(g Gomega) {
				refused := launchAt(r)
				g.Expect(refused.Ltik).To(BeEmpty())
				g.Expect(refused.Status).To(Equal(401))
				g.Expect(refused.Body).To(ContainSubstring(lti.CodeUnknownKID))
			}).Should(Succeed())
		}
	})

	It("refuses a tool's token request signed with a key the tool withdrew as soon as the ToolRegistration is annotated", func(ctx SpecContext) {
		d := startPlatformInstance("ltiop-keyset-refresh", nil)
		tool, toolURL := serveToolSim(d, nil)
		keySet := newWithdrawableKeySet()
		own := tool.JWKS()
		keySet.jwks.Store(&own)
		reg := registerToolOn(ctx, d, "refresh-tool", tool, toolURL, func(s *ltiv1.ToolRegistrationSpec) {
			s.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: keySet.srv.URL + "/jwks"}
		})
		scopes := []string{string(ltiv1.ScopeNRPSMembership)}
		_, status, err := tool.RequestToken(ctx, scopes)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200), "the tool's key set is fetched and cached")

		By("the tool withdraws its key: the cached set still holds it")
		keySet.withdrawn.Store(true)
		_, status, err = tool.RequestToken(ctx, scopes)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200), "accepted from the cache")

		By("annotating the ToolRegistration")
		annotateRefresh(ctx, reg, "incident-43")
		Eventually(func(g Gomega) {
			tr, status, err := tool.RequestToken(ctx, scopes)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(401))
			g.Expect(tr.ErrorDescription).To(HavePrefix(ltiplatform.CodeUnknownKID))
		}).Should(Succeed())
	})
})
