package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// rbacKinds are what a user installs for ltiop's identity and rights; the CRDs are in
// place already, and the Deployment is what this test plays itself.
var rbacKinds = map[string]bool{"Namespace": true, "ServiceAccount": true, "Role": true, "RoleBinding": true,
	"ClusterRole": true, "ClusterRoleBinding": true}

// installRBAC applies the identity and rights among objs for real, Namespaces first.
func installRBAC(objs testmanifests.Objects) {
	only := objs.OfKind("Namespace")
	for _, u := range objs {
		if rbacKinds[u.GetKind()] && u.GetKind() != "Namespace" {
			only = append(only, u)
		}
	}
	ExpectWithOffset(1, testmanifests.Apply(context.Background(), k8s, only, "e2e", false)).To(Succeed())
}

// asServiceAccount is restCfg impersonating a ServiceAccount: the API server then
// authorizes each request with that account's rights alone.
func asServiceAccount(ns, name string) *rest.Config {
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)}
	return cfg
}

// The RBAC ltiop ships is enough for it to run: a replica reaches the API server as the
// rendered ServiceAccount, with nothing but the rendered Roles, and does its whole job.
var _ = Describe("The shipped RBAC", func() {
	DescribeTable("lets ltiop run as its ServiceAccount: ready, reconciling, serving launches and the platforms API",
		func(ns string, render func(ns string) testmanifests.Objects, secureMetrics bool) {
			objs := render(ns)
			if objs.Find("Namespace", ns) == nil {
				Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			}
			installRBAC(objs)
			Expect(k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ltiop-api-key"},
				StringData: map[string]string{"apiKey": apiKey}})).To(Succeed())
			sa := objs.OfKind("ServiceAccount")
			Expect(sa).To(HaveLen(1))
			metricsPort := freePort()
			d := startReplica(ns, asServiceAccount(ns, sa[0].GetName()), func(c *config.Config) {
				c.LeaderElection, c.LaunchURL = true, launchURL
				if secureMetrics {
					c.MetricsListen, c.MetricsSecure = fmt.Sprintf("127.0.0.1:%d", metricsPort), true
				}
			})
			Eventually(d.Leading).Should(BeTrue(), "it takes the lease")

			By("reconciling a PlatformRegistration: key Secret, status, event")
			lmsSrv := httptest.NewServer(nil)
			DeferCleanup(lmsSrv.Close)
			sim, err := lmssim.New(lmsSrv.URL, "rbac-client", "deployment-1")
			Expect(err).NotTo(HaveOccurred())
			lmsSrv.Config.Handler = sim.Handler()
			reg := &ltiv1.PlatformRegistration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lms"}, Spec: simRegistration(sim, lmsSrv.URL)}
			Expect(k8s.Create(context.Background(), reg)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(reg), reg)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionReady)).To(BeTrue())
				g.Expect(reg.Status.KeySecretName).NotTo(BeEmpty())
			}).Should(Succeed())
			Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: reg.Status.KeySecretName}, &corev1.Secret{})).To(Succeed())
			Eventually(func() []string {
				var reasons []string
				for _, e := range eventsOn(ns, reg.Name, "") {
					reasons = append(reasons, e.Reason)
				}
				return reasons
			}).Should(ContainElement(ltiv1.ReasonKeyCreated))

			By("reconciling a ToolRegistration")
			tool := newToolSim(d, nil)
			toolReg := registerTool(context.Background(), ns, "quiz-tool", tool, "https://tool.example")
			Expect(toolReg.Status.ClientID).NotTo(BeEmpty())

			By("serving a launch")
			Eventually(func() bool { p := d.Registry.Get(reg.Name); return p != nil && p.Ready && p.Key != nil }).Should(BeTrue())
			sim.ToolLoginURL, sim.ToolRedirectURI = d.URL+paths.Login, d.URL+paths.Launch
			b := newBrowser()
			res, err := b.client.Get(lmsSrv.URL + lmssim.StartPath)
			Expect(err).NotTo(HaveOccurred())
			launched := b.submit(readBody(res))
			Expect(launched.Ltik).NotTo(BeEmpty(), launched.Body)

			By("creating, changing and deleting through the platforms API")
			created := callAt(d.Local, "POST", "/api/platforms", canvasBody("rbac-api-client"), bearer)
			Expect(created.Status).To(Equal(201), string(created.Raw))
			id := created.JSON["id"].(string)
			changed := canvasBody("rbac-api-client")
			changed["name"] = "Canvas, renamed"
			Expect(callAt(d.Local, "PUT", "/api/platforms/"+id, changed, bearer).Status).To(Equal(200))
			Expect(callAt(d.Local, "POST", "/api/platforms/"+id+"/deactivate", nil, bearer).Status).To(Equal(200))
			Expect(callAt(d.Local, "DELETE", "/api/platforms/"+id, nil, bearer).Status).To(Equal(204))

			if secureMetrics {
				By("serving /metrics over HTTPS to an authorized ServiceAccount only")
				scrape(metricsPort, ns)
			}
		},
		Entry("config/default", "ltiop-system", func(string) testmanifests.Objects {
			objs, err := testmanifests.Kustomize(fmt.Sprintf("%s/config/default", testenv.Root()))
			Expect(err).NotTo(HaveOccurred())
			return objs
		}, false),
		Entry("the Helm chart, metrics over HTTPS", "lti-chart-rbac", func(ns string) testmanifests.Objects {
			objs, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", ns, map[string]any{
				"publicUrl": "https://lti.example.com", "metrics": map[string]any{"secure": true},
				// the Secret this test creates, as a user with their own would
				"apiKey": map[string]any{"existingSecret": "ltiop-api-key"}})
			Expect(err).NotTo(HaveOccurred())
			return objs
		}, true),
	)
})

// scrape checks the secure metrics endpoint on port: refused without a token (401) and to
// a ServiceAccount without the metrics-reader role (403), served to one bound to it.
func scrape(port int, ns string) {
	ctx := context.Background()
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed
	get := func(token string) int {
		req, err := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := insecure.Do(req)
		Expect(err).NotTo(HaveOccurred())
		res.Body.Close()
		return res.StatusCode
	}
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		Expect(k8s.Create(ctx, sa)).To(Succeed())
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		Expect(k8s.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		return tr.Status.Token
	}
	Expect(get("")).To(Equal(http.StatusUnauthorized))
	Expect(get(token("stranger"))).To(Equal(http.StatusForbidden))
	prometheus := token("prometheus")
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-ltiop-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ltiop-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
	})).To(Succeed())
	Eventually(func() int { return get(prometheus) }).Should(Equal(http.StatusOK))
}
