package node_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/simulators/datasim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/simulators/stdwebhook"
	"github.com/ltiop/ltiop/simulators/toolsim"
	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// The signing secret of the integrator's data API calls (a Standard Webhooks secret).
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// platformSpecs run platform mode through the cluster: ltiop launches a tool and serves it
// the roster, which it reads from the integrator's data API. env gives the CA, the Service's
// URL and the values the release runs with.
func platformSpecs(env func() (*lmsCA, string, map[string]any)) {
	ctx := context.Background()

	It("launches a tool in platform mode and serves it the roster from the integrator's data API", func() {
		ca, base, values := env()

		// The integrator's data API, over https on the node's bridge, signed with the secret.
		key, err := stdwebhook.ParseSecret(webhookSecret)
		Expect(err).NotTo(HaveOccurred())
		data := datasim.New(key)
		data.AddMembers("course-1", "Biology", datasim.Member{UserID: "student-5", Roles: []string{"Learner"}, Name: "Sam"},
			datasim.Member{UserID: "teacher-1", Roles: []string{"Instructor"}})
		dataURL := serveTLS(ca, func(string) http.Handler { return data.Handler() })
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			secret, err := clientset.CoreV1().Secrets(helmNamespace).Get(ctx, release+"-api-key", metav1.GetOptions{})
			if err != nil {
				return err
			}
			secret.Data["webhookSecret"] = []byte(webhookSecret)
			_, err = clientset.CoreV1().Secrets(helmNamespace).Update(ctx, secret, metav1.UpdateOptions{})
			return err
		})).To(Succeed())
		cfg := values["config"].(map[string]any)
		cfg["platformLaunchUrl"] = appURL + "/platform-launch"
		cfg["platformData"] = map[string]any{"url": dataURL + "/data"}
		cfg["integratorAllowCidrs"] = []string{nodeIP + "/32"}
		helm("upgrade", release, "charts/ltiop", "-n", helmNamespace, "-f", writeValues(values), "--wait", "--timeout", "5m")
		// Until the pods of the previous configuration (no platformLaunchUrl) are gone, a
		// request may still reach one and be refused with PLATFORM_MODE_NOT_CONFIGURED.
		Eventually(func() int { return len(allPods(ctx, ltiopPods)) }).Should(Equal(3))

		// The tool, over https on the bridge; it reaches ltiop's public URL through the Service.
		httpClient := publicClient(ca, base)
		tool, err := toolsim.New(toolsim.Config{Issuer: publicURL,
			AuthorizationEndpoint: publicURL + paths.PlatformAuthorize,
			TokenEndpoint:         publicURL + paths.PlatformToken,
			PlatformJWKSURL:       publicURL + paths.PlatformJWKS,
			HTTPClient:            httpClient})
		Expect(err).NotTo(HaveOccurred())
		toolURL := serveTLS(ca, func(string) http.Handler { return tool.Handler() })
		reg := &ltiv1.ToolRegistration{
			ObjectMeta: metav1.ObjectMeta{Namespace: helmNamespace, Name: "quiz-tool"},
			Spec: ltiv1.ToolRegistrationSpec{
				Name: "Quiz tool", LoginURL: ltiv1.EndpointURL(toolURL + toolsim.LoginPath),
				RedirectionURIs: []ltiv1.EndpointURL{ltiv1.EndpointURL(toolURL + toolsim.LaunchPath)},
				TargetLinkURI:   ltiv1.EndpointURL(toolURL + toolsim.LaunchPath),
				AuthConfig:      ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: tool.PublicJWK()},
				Scopes:          []ltiv1.Scope{ltiv1.ScopeNRPSMembership},
			},
		}
		Expect(k8s.Create(ctx, reg)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(reg), reg)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(reg.Status.Conditions, ltiv1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
		tc := tool.Config()
		tc.ClientID, tc.DeploymentID = reg.Status.ClientID, reg.Status.DeploymentID
		tool.SetConfig(tc)

		By("the integrator creating a launch, the browser going through the tool's login and ltiop's authorization")
		apiKey := apiKeyOf(ctx)
		var created testhttp.Reply
		Eventually(func() int { // every replica learns of the Ready tool through its informer
			created = apiCall(base, "POST", "/api/launches", "Bearer "+apiKey, map[string]any{"toolId": reg.Name, "user": "student-5",
				"resourceLink": map[string]string{"id": "rl-1"}})
			return created.Status
		}).Should(Equal(201), func() string { return created.Body })
		action, form, ok := lmssim.ParseAutoSubmit(created.JSON(GinkgoTB())["form"].(string))
		Expect(ok).To(BeTrue())
		res, err := httpClient.PostForm(action, form)
		Expect(err).NotTo(HaveOccurred())
		readAll(res)
		Expect(res.StatusCode).To(Equal(http.StatusFound), "the tool's login initiation")
		res, err = httpClient.Get(res.Header.Get("Location")) // ltiop's authorization endpoint
		Expect(err).NotTo(HaveOccurred())
		body := readAll(res)
		Expect(res.StatusCode).To(Equal(http.StatusFound), body)
		toIntegrator, err := url.Parse(res.Header.Get("Location"))
		Expect(err).NotTo(HaveOccurred())
		Expect(toIntegrator.String()).To(HavePrefix(appURL + "/platform-launch?"))

		By("the integrator answering with the launch's id token, the browser posting it to the tool")
		answer := apiCall(base, "POST", "/api/launches/idtoken", "Bearer "+apiKey, map[string]any{
			"payload":  toIntegrator.Query().Get("payload"),
			"user":     map[string]any{"roles": []string{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}},
			"context":  map[string]any{"id": "course-1"},
			"services": map[string]any{"namesAndRoles": true},
		})
		Expect(answer.Status).To(Equal(200), answer.Body)
		action, form, ok = lmssim.ParseAutoSubmit(answer.JSON(GinkgoTB())["form"].(string))
		Expect(ok).To(BeTrue())
		res, err = httpClient.PostForm(action, form)
		Expect(err).NotTo(HaveOccurred())
		readAll(res)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		launch, err := tool.WaitLaunch(waitCtx, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(launch.OK).To(BeTrue(), launch.Err)
		nrps := launch.Claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"].(map[string]any)
		memberships := nrps["context_memberships_url"].(string)
		Expect(memberships).To(HavePrefix(publicURL + "/lti/platform/services/"))

		By("the tool reading the roster through ltiop with a token from ltiop")
		tr, status, err := tool.RequestToken(ctx, []string{string(ltiv1.ScopeNRPSMembership)})
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(200))
		Eventually(func(g Gomega) { // the webhook secret reaches every replica through its informer
			ans, err := tool.CallService(ctx, "GET", memberships, tr.AccessToken, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", "", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ans.Status).To(Equal(200), string(ans.Body))
			g.Expect(string(ans.Body)).To(ContainSubstring(`"user_id":"teacher-1"`))
			g.Expect(string(ans.Body)).To(ContainSubstring(`"user_id":"student-5"`))
		}).Should(Succeed())
	})
}

// apiKeyOf is the release's generated API key.
func apiKeyOf(ctx context.Context) string {
	secret, err := clientset.CoreV1().Secrets(helmNamespace).Get(ctx, release+"-api-key", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(secret.Data["apiKey"]))
}
