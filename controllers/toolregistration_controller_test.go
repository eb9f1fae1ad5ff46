package controllers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

func exampleTool(name string) *ltiv1.ToolRegistration {
	return &ltiv1.ToolRegistration{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: ltiv1.ToolRegistrationSpec{
			Name:            "Example Tool",
			LoginURL:        "https://tool.example/lti/login",
			RedirectionURIs: []ltiv1.EndpointURL{"https://tool.example/lti/launch", "https://tool.example/lti/deeplink"},
			TargetLinkURI:   "https://tool.example/lti/launch",
			DeepLinkingURL:  "https://tool.example/lti/deeplink",
			AuthConfig:      ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://tool.example/.well-known/jwks.json"},
			Scopes:          []ltiv1.Scope{ltiv1.ScopeNRPSMembership, ltiv1.ScopeAGSScore},
		},
	}
}

var _ = Describe("ToolRegistration controller", func() {
	ctx := context.Background()

	It("publishes the platform's endpoints and uses the UID as client id when none is given", func() {
		tool := exampleTool(uniqueName("tool"))
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		cur := fresh(tool)
		Expect(cur.Spec.Active).To(Equal(ptr.To(true)), "active defaults to true")
		Expect(cur.Spec.DeploymentID).To(Equal("1"), "deploymentId defaults to 1")
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		Expect(cur.Status.Issuer).To(Equal(publicURL), "the issuer defaults to the public URL")
		Expect(cur.Status.ClientID).To(Equal(string(cur.UID)))
		Expect(cur.Status.DeploymentID).To(Equal("1"))
		Expect(cur.Status.AuthorizationEndpoint).To(Equal(publicURL + "/lti/platform/authorize"))
		Expect(cur.Status.TokenEndpoint).To(Equal(publicURL + "/lti/platform/token"))
		Expect(cur.Status.JWKSURL).To(Equal(publicURL + "/lti/platform/jwks"))
		Expect(meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionStalled)).To(BeNil())
		Expect(meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionReconciling)).To(BeNil())

		// Idempotent: once Ready, nothing is rewritten.
		version := cur.ResourceVersion
		Consistently(func() string { return fresh(tool).ResourceVersion }, time.Second).Should(Equal(version))
	})

	It("can be found by its client id with a field selector, with or without spec.clientId", func() {
		generated := exampleTool(uniqueName("selected"))
		explicit := exampleTool(uniqueName("selected"))
		explicit.Spec.ClientID = uniqueName("client")
		Expect(k8s.Create(ctx, generated)).To(Succeed())
		Expect(k8s.Create(ctx, explicit)).To(Succeed())
		Eventually(readyCondition(generated)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		Eventually(readyCondition(explicit)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		// The API server filters (k8s reads straight through it, no cache).
		selected := func(field, value string) []string {
			var list ltiv1.ToolRegistrationList
			Expect(k8s.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{field: value})).To(Succeed())
			var names []string
			for _, t := range list.Items {
				names = append(names, t.Name)
			}
			return names
		}
		Expect(selected("status.clientId", string(fresh(generated).UID))).To(Equal([]string{generated.Name}),
			"a tool without spec.clientId is selected by the client id it was given")
		Expect(selected("status.clientId", explicit.Spec.ClientID)).To(Equal([]string{explicit.Name}))
		Expect(selected("spec.clientId", explicit.Spec.ClientID)).To(Equal([]string{explicit.Name}))
		Expect(selected("status.clientId", "no-such-client")).To(BeEmpty())
	})

	It("uses an explicit clientId and deploymentId, and keeps an inactive tool Ready", func() {
		tool := exampleTool(uniqueName("explicit"))
		tool.Spec.ClientID = uniqueName("client")
		tool.Spec.DeploymentID = "deployment-7"
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		cur := fresh(tool)
		Expect(cur.Status.ClientID).To(Equal(tool.Spec.ClientID))
		Expect(cur.Status.DeploymentID).To(Equal("deployment-7"))

		cur.Spec.Active = ptr.To(false)
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(readyCondition(tool)).Should(And(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady), withMessage("inactive")))
		Expect(fresh(tool).Status.ObservedGeneration).To(Equal(int64(2)))
	})

	DescribeTable("refuses a plain http URL outside dev mode, naming the field, until it is fixed",
		func(mutate func(*ltiv1.ToolRegistration), field string, fix func(*ltiv1.ToolRegistration)) {
			tool := exampleTool(uniqueName("http"))
			mutate(tool)
			Expect(k8s.Create(ctx, tool)).To(Succeed())
			Eventually(readyCondition(tool)).Should(And(haveReason(metav1.ConditionFalse, ltiv1.ReasonInsecureURL),
				withMessage("spec."+field+":"), withMessage("must use https")))
			cur := fresh(tool)
			stalled := meta.FindStatusCondition(cur.Status.Conditions, ltiv1.ConditionStalled)
			Expect(stalled).NotTo(BeNil())
			Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			Expect(stalled.Reason).To(Equal(ltiv1.ReasonInsecureURL))
			Expect(stalled.ObservedGeneration).To(Equal(cur.Generation))
			Eventually(eventsFor(tool.Name, ltiv1.ReasonInsecureURL)).Should(HaveLen(1))

			// No hot loop: nothing is written again while the spec stays the same.
			version := cur.ResourceVersion
			Consistently(func() string { return fresh(tool).ResourceVersion }, 2*time.Second).Should(Equal(version))

			fix(cur)
			Expect(updateSpec(cur)).To(Succeed())
			Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
			fixed := fresh(tool)
			Expect(fixed.Status.ObservedGeneration).To(Equal(int64(2)))
			Expect(meta.FindStatusCondition(fixed.Status.Conditions, ltiv1.ConditionStalled)).To(BeNil())
		},
		Entry("loginUrl, fixed with https",
			func(t *ltiv1.ToolRegistration) { t.Spec.LoginURL = "http://tool.example/lti/login" }, "loginUrl",
			func(t *ltiv1.ToolRegistration) { t.Spec.LoginURL = "https://tool.example/lti/login" }),
		Entry("a redirection URI, fixed with the registration's dev mode",
			func(t *ltiv1.ToolRegistration) { t.Spec.RedirectionURIs[1] = "http://tool.example/lti/deeplink" }, "redirectionUris[1]",
			func(t *ltiv1.ToolRegistration) { t.Spec.DevMode = true }),
		Entry("targetLinkUri",
			func(t *ltiv1.ToolRegistration) { t.Spec.TargetLinkURI = "http://tool.example/lti/launch" }, "targetLinkUri",
			func(t *ltiv1.ToolRegistration) { t.Spec.DevMode = true }),
		Entry("deepLinkingUrl",
			func(t *ltiv1.ToolRegistration) { t.Spec.DeepLinkingURL = "http://tool.example/lti/deeplink" }, "deepLinkingUrl",
			func(t *ltiv1.ToolRegistration) { t.Spec.DeepLinkingURL = "" }),
		Entry("a JWK_SET key",
			func(t *ltiv1.ToolRegistration) { t.Spec.AuthConfig.Key = "http://tool.example/jwks" }, "authConfig.key",
			func(t *ltiv1.ToolRegistration) { t.Spec.DevMode = true }),
		Entry("platformDataUrl",
			func(t *ltiv1.ToolRegistration) { t.Spec.PlatformDataURL = "http://learn.example/ltiop-data" }, "platformDataUrl",
			func(t *ltiv1.ToolRegistration) { t.Spec.PlatformDataURL = "https://learn.example/ltiop-data" }),
	)

	It("refuses a redirection URI with a fragment", func() {
		tool := exampleTool(uniqueName("fragment"))
		tool.Spec.RedirectionURIs = append(tool.Spec.RedirectionURIs, "https://tool.example/lti/launch#top")
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		Eventually(readyCondition(tool)).Should(And(haveReason(metav1.ConditionFalse, ltiv1.ReasonInvalidRedirectionURI),
			withMessage("spec.redirectionUris[2]"), withMessage("fragment")))
		Eventually(eventsFor(tool.Name, ltiv1.ReasonInvalidRedirectionURI)).Should(HaveLen(1))

		cur := fresh(tool)
		cur.Spec.RedirectionURIs = cur.Spec.RedirectionURIs[:2]
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	DescribeTable("refuses a tool key that is not an RSA public key of 2048 bits or more",
		func(method ltiv1.AuthMethod, key func() string, want string) {
			tool := exampleTool(uniqueName("badkey"))
			tool.Spec.AuthConfig = ltiv1.AuthConfig{Method: method, Key: key()}
			Expect(k8s.Create(ctx, tool)).To(Succeed())
			Eventually(readyCondition(tool)).Should(And(haveReason(metav1.ConditionFalse, ltiv1.ReasonInvalidAuthConfig),
				withMessage("spec.authConfig"), withMessage(want)))
			Eventually(eventsFor(tool.Name, ltiv1.ReasonInvalidAuthConfig)).Should(HaveLen(1))

			cur := fresh(tool)
			cur.Spec.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: rsaPublicPEM(2048)}
			Expect(updateSpec(cur)).To(Succeed())
			Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		},
		Entry("RSA_KEY that is not PEM data", ltiv1.AuthMethodRSAKey,
			func() string { return "-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n" }, "RSA_KEY is not a PEM RSA public key"),
		Entry("RSA_KEY of 1024 bits", ltiv1.AuthMethodRSAKey, func() string { return rsaPublicPEM(1024) }, "at least 2048"),
		Entry("RSA_KEY holding an EC key", ltiv1.AuthMethodRSAKey, func() string {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			Expect(err).NotTo(HaveOccurred())
			der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
			Expect(err).NotTo(HaveOccurred())
			return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		}, "not an RSA public key"),
		Entry("JWK_KEY holding a private key", ltiv1.AuthMethodJWKKey, func() string {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			Expect(err).NotTo(HaveOccurred())
			return jwkJSON(k)
		}, "private key"),
	)

	It("accepts a JWK_KEY", func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		tool := exampleTool(uniqueName("jwk"))
		tool.Spec.AuthConfig = ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: jwkJSON(&k.PublicKey)}
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	It("accepts the sample in config/samples", func() {
		data, err := os.ReadFile("../config/samples/lti_v1alpha1_toolregistration.yaml")
		Expect(err).NotTo(HaveOccurred())
		tool := &ltiv1.ToolRegistration{}
		Expect(yaml.UnmarshalStrict(data, tool)).To(Succeed())
		tool.Namespace, tool.Name = namespace, uniqueName(tool.Name)
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		Eventually(readyCondition(tool)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	DescribeTable("the schema refuses malformed tools before they are stored",
		func(mutate func(*ltiv1.ToolRegistration), want string) {
			tool := exampleTool(uniqueName("schema"))
			mutate(tool)
			err := k8s.Create(ctx, tool)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("no redirectionUris", func(t *ltiv1.ToolRegistration) { t.Spec.RedirectionURIs = nil }, "spec.redirectionUris: Required value"),
		Entry("empty redirectionUris", func(t *ltiv1.ToolRegistration) { t.Spec.RedirectionURIs = []ltiv1.EndpointURL{} }, "spec.redirectionUris in body should have at least 1 items"),
		Entry("relative loginUrl", func(t *ltiv1.ToolRegistration) { t.Spec.LoginURL = "/lti/login" }, `spec.loginUrl: Invalid value: "/lti/login": must be an absolute http(s) URL`),
		Entry("relative redirection URI", func(t *ltiv1.ToolRegistration) { t.Spec.RedirectionURIs[0] = "/lti/launch" }, "spec.redirectionUris[0]: Invalid value"),
		Entry("unknown scope", func(t *ltiv1.ToolRegistration) {
			t.Spec.Scopes = append(t.Spec.Scopes, "https://purl.imsglobal.org/spec/lti-ags/scope/everything")
		}, "spec.scopes[2]: Unsupported value"),
		Entry("unknown authConfig method", func(t *ltiv1.ToolRegistration) { t.Spec.AuthConfig.Method = "HS256" }, "spec.authConfig.method: Unsupported value"),
		Entry("JWK_SET key that is no URL", func(t *ltiv1.ToolRegistration) { t.Spec.AuthConfig.Key = "not a url" }, "JWK_SET key must be"),
		Entry("missing name", func(t *ltiv1.ToolRegistration) { t.Spec.Name = "" }, "spec.name"),
		Entry("custom key with a space", func(t *ltiv1.ToolRegistration) {
			t.Spec.Custom = map[string]string{"id": "ok", "resource id": "x"}
		}, "custom keys must be 1 to 128 letters, digits"),
		Entry("custom key of 129 characters", func(t *ltiv1.ToolRegistration) {
			t.Spec.Custom = map[string]string{strings.Repeat("k", 129): "x"}
		}, "custom keys must be 1 to 128 letters, digits"),
		Entry("custom value of 1025 characters", func(t *ltiv1.ToolRegistration) {
			t.Spec.Custom = map[string]string{"id": strings.Repeat("é", 1025)}
		}, "custom values must be at most 1024 characters"),
		Entry("65 custom parameters", func(t *ltiv1.ToolRegistration) {
			t.Spec.Custom = map[string]string{}
			for i := range 65 {
				t.Spec.Custom[fmt.Sprintf("p%d", i)] = "v"
			}
		}, "spec.custom: Too many: 65: must have at most 64 items"),
	)

	It("stores custom parameters at the limits", func() {
		tool := exampleTool(uniqueName("custom"))
		tool.Spec.Custom = map[string]string{strings.Repeat("k", 128): strings.Repeat("é", 1024), "id": "$ResourceLink.id"}
		for i := range 62 {
			tool.Spec.Custom[fmt.Sprintf("p.%d-x_y", i)] = ""
		}
		Expect(k8s.Create(ctx, tool)).To(Succeed())
		got := &ltiv1.ToolRegistration{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tool), got)).To(Succeed())
		Expect(got.Spec.Custom).To(Equal(tool.Spec.Custom))
	})

	It("keeps the older of two tools with the same client id and marks the newer", func() {
		clientID := uniqueName("shared")
		first := exampleTool(uniqueName("first"))
		first.Spec.ClientID = clientID
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(readyCondition(first)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
		second := exampleTool(uniqueName("second"))
		second.Spec.ClientID = clientID
		Expect(k8s.Create(ctx, second)).To(Succeed())

		Eventually(readyCondition(second)).Should(And(haveReason(metav1.ConditionFalse, ltiv1.ReasonDuplicateRegistration),
			withMessage(first.Name), withMessage(clientID)))
		Eventually(eventsFor(second.Name, ltiv1.ReasonDuplicateRegistration)).Should(HaveLen(1))
		Consistently(readyCondition(first), time.Second).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))

		// When the older one goes, the newer one takes over.
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(readyCondition(second)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
	})

	It("compares effective client ids, and re-checks a duplicate when its peer changes", func() {
		first := exampleTool(uniqueName("generated"))
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(readyCondition(first)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		time.Sleep(1100 * time.Millisecond)

		// A clientId equal to the older tool's generated one is a duplicate too.
		second := exampleTool(uniqueName("copycat"))
		second.Spec.ClientID = string(fresh(first).UID)
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(readyCondition(second)).Should(haveReason(metav1.ConditionFalse, ltiv1.ReasonDuplicateRegistration))

		// The older one moves to another client id: the newer one is freed without being touched.
		cur := fresh(first)
		cur.Spec.ClientID = uniqueName("moved")
		Expect(updateSpec(cur)).To(Succeed())
		Eventually(readyCondition(first)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		Eventually(readyCondition(second)).Should(haveReason(metav1.ConditionTrue, ltiv1.ReasonReady))
		Expect(fresh(second).Generation).To(Equal(int64(1)))
	})
})
