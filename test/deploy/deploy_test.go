package deploy

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// applyDryRun has the API server validate and admit every object (stores nothing), after
// creating the Namespace objects among them for real: a dry-run in a missing namespace fails.
func applyDryRun(objs testmanifests.Objects) {
	ctx := context.Background()
	for _, ns := range objs.OfKind("Namespace") {
		ExpectWithOffset(1, testmanifests.Apply(ctx, k8s, testmanifests.Objects{ns}, "test", false)).To(Succeed())
	}
	ExpectWithOffset(1, testmanifests.Apply(ctx, k8s, objs, "test", true)).To(Succeed())
}

var _ = Describe("config/default", func() {
	It("renders manifests the API server accepts", func() {
		objs := kustomize(configDir("default"))
		Expect(objs.Find("Deployment", "ltiop")).NotTo(BeNil())
		Expect(objs.OfKind("CustomResourceDefinition")).To(HaveLen(2))
		applyDryRun(objs)
	})

	It("with every component, moved to another namespace: the ServiceMonitor, bindings and NetworkPolicy follow, metrics go HTTPS", func() {
		const ns = "lti-elsewhere"
		objs := kustomize(filepath.Join("testdata", "all-components"))
		for _, u := range objs {
			switch u.GetKind() {
			case "Namespace":
				Expect(u.GetName()).To(Equal(ns))
			case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
			default:
				Expect(u.GetNamespace()).To(Equal(ns), "%s %s", u.GetKind(), u.GetName())
			}
		}
		for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
			for _, b := range objs.OfKind(kind) {
				for _, s := range field(b, "subjects").([]any) {
					Expect(s).To(HaveKeyWithValue("namespace", ns), "%s %s", kind, b.GetName())
				}
			}
		}

		monitor := objs.Find("ServiceMonitor", "ltiop")
		Expect(monitor).NotTo(BeNil())
		Expect(field(monitor, "spec")).NotTo(HaveKey("namespaceSelector"), "a ServiceMonitor looks in its own namespace")
		endpoint := field(monitor, "spec", "endpoints").([]any)[0].(map[string]any)
		Expect(endpoint).To(HaveKeyWithValue("scheme", "https"))
		Expect(endpoint).To(HaveKey("bearerTokenFile"))
		Expect(container(objs.Find("Deployment", "ltiop"))["env"]).To(ContainElement(
			map[string]any{"name": "LTIOP_METRICS_SECURE", "value": "true"}))

		policy := objs.Find("NetworkPolicy", "ltiop")
		Expect(policy).NotTo(BeNil())
		ingress := field(policy, "spec", "ingress").([]any)
		Expect(ingress).To(HaveLen(2))
		Expect(ingress[0]).NotTo(HaveKey("from"), "the web port is open to anyone")
		Expect(ingress[1]).To(HaveKey("from"), "the metrics port only to the monitoring namespace")

		Expect(objs.Find("ClusterRole", "ltiop-metrics-reader")).NotTo(BeNil())
		applyDryRun(objs)
	})
})

var _ = Describe("The Helm chart", func() {
	lintWith := func(values map[string]any) []support.Message {
		var bad []support.Message
		for _, m := range lint.RunAll(chartDir(), values, chartNamespace).Messages {
			if m.Severity > support.InfoSev {
				bad = append(bad, m)
			}
		}
		return bad
	}

	It("passes helm lint with the default values and with every option on", func() {
		Expect(lintWith(defaultValues())).To(BeEmpty())
		Expect(lintWith(fullValues())).To(BeEmpty())
	})

	It("renders manifests the API server accepts with the default values", func() {
		objs := mustRenderChart(defaultValues())
		Expect(objs.Find("Deployment", "ltiop")).NotTo(BeNil())
		Expect(objs.OfKind("CustomResourceDefinition")).To(HaveLen(2))
		// ltiop itself has namespaced rights only, unless metrics.secure: the ClusterRoles
		// are the four for people, and nothing binds a ClusterRole.
		var clusterRoles []string
		for _, r := range objs.OfKind("ClusterRole") {
			clusterRoles = append(clusterRoles, r.GetName())
		}
		Expect(clusterRoles).To(ConsistOf("ltiop-platformregistration-editor", "ltiop-platformregistration-viewer",
			"ltiop-toolregistration-editor", "ltiop-toolregistration-viewer"))
		Expect(objs.OfKind("ClusterRoleBinding")).To(BeEmpty())
		Expect(objs.Find("ServiceMonitor", "ltiop")).To(BeNil())
		applyDryRun(objs)
	})

	It("renders manifests the API server accepts with every option on", func() {
		objs := mustRenderChart(fullValues())
		for _, kind := range []string{"ServiceMonitor", "NetworkPolicy", "Ingress", "HTTPRoute", "PodDisruptionBudget"} {
			Expect(objs.Find(kind, "ltiop")).NotTo(BeNil(), kind)
		}
		Expect(objs.Find("Deployment", "ltiop-redis")).NotTo(BeNil())
		Expect(objs.Find("ClusterRole", "ltiop-metrics-auth")).NotTo(BeNil())
		Expect(objs.Find("ClusterRole", "ltiop-metrics-reader")).NotTo(BeNil())

		c := container(objs.Find("Deployment", "ltiop"))
		Expect(c["args"]).To(Equal([]any{"--log-level=debug", "--log-format=json", "--config=/etc/ltiop/config.yaml", "--key-workers=8"}))
		Expect(c["env"]).To(ContainElements(
			map[string]any{"name": "LTIOP_REPLAY_STORE", "value": "redis://ltiop-redis." + chartNamespace + ".svc:6379/0"},
			map[string]any{"name": "LTIOP_METRICS_SECURE", "value": "true"},
			map[string]any{"name": "LTIOP_TRUSTED_PROXIES", "value": "10.0.0.0/8"},
		))
		endpoint := field(objs.Find("ServiceMonitor", "ltiop"), "spec", "endpoints").([]any)[0].(map[string]any)
		Expect(endpoint).To(HaveKeyWithValue("scheme", "https"))
		Expect(field(objs.Find("ServiceMonitor", "ltiop"), "spec")).NotTo(HaveKey("namespaceSelector"))
		applyDryRun(objs)
	})

	It("generates an API key long enough for ltiop to accept", func() {
		secret := mustRenderChart(defaultValues()).Find("Secret", "ltiop-api-key")
		Expect(secret).NotTo(BeNil())
		key, err := base64.StdEncoding.DecodeString(field(secret, "data", "apiKey").(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(key)).To(BeNumerically(">=", 32))
		Expect(secret.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))

		withOwn := mustRenderChart(map[string]any{"publicUrl": "https://lti.example.com", "apiKey": map[string]any{"existingSecret": "mine"}})
		Expect(withOwn.OfKind("Secret")).To(BeEmpty(), "an existing Secret is used, not made")
		Expect(container(withOwn.Find("Deployment", "ltiop"))["env"]).To(ContainElement(
			map[string]any{"name": "LTIOP_API_KEY_SECRET", "value": "mine"}))
	})

	DescribeTable("refuses values that would not work",
		func(values map[string]any, want string) {
			_, err := renderChart(values)
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("no publicUrl", map[string]any{}, "publicUrl"),
		Entry("a publicUrl that is no URL", map[string]any{"publicUrl": "lti.example.com"}, "publicUrl"),
		Entry("several replicas with the in-memory replay store",
			map[string]any{"publicUrl": "https://lti.example.com", "replicas": 2}, "replicas > 1 needs a shared replay store"),
		Entry("a replay store that is not Redis",
			map[string]any{"publicUrl": "https://lti.example.com", "replayStore": map[string]any{"url": "memcached://x"}}, "replayStore"),
		Entry("an unknown value (a typo)", map[string]any{"publicUrl": "https://lti.example.com", "replica": 2}, "replica"),
		Entry("an Ingress without a host",
			map[string]any{"publicUrl": "https://lti.example.com", "ingress": map[string]any{"enabled": true}}, "ingress.host is required"),
	)

	It("describes the same Deployment, Service and RBAC as config/default", func() {
		kust := kustomize(configDir("default"))
		chart := mustRenderChart(defaultValues())

		kd, cd := kust.Find("Deployment", "ltiop"), chart.Find("Deployment", "ltiop")
		for _, path := range [][]string{
			{"spec", "strategy"},
			{"spec", "template", "spec", "securityContext"},
			{"spec", "template", "spec", "terminationGracePeriodSeconds"},
		} {
			Expect(field(cd, path...)).To(Equal(field(kd, path...)), "%v", path)
		}
		kc, cc := container(kd), container(cd)
		for _, key := range []string{"ports", "startupProbe", "livenessProbe", "readinessProbe", "securityContext", "resources", "args", "command"} {
			if kc[key] == nil {
				Expect(cc[key]).To(BeNil(), key)
			} else {
				Expect(cc[key]).To(Equal(kc[key]), key)
			}
		}
		// Every variable config/default sets, the chart sets the same way (the public URL
		// is the user's); the chart may name more (the API key Secret it made).
		cenv := map[string]any{}
		for _, e := range cc["env"].([]any) {
			cenv[e.(map[string]any)["name"].(string)] = e
		}
		for _, e := range kc["env"].([]any) {
			name := e.(map[string]any)["name"].(string)
			Expect(cenv).To(HaveKey(name))
			if name != "LTIOP_PUBLIC_URL" {
				Expect(cenv[name]).To(Equal(e), name)
			}
		}
		spread := func(d *unstructured.Unstructured) map[string]any {
			c := field(d, "spec", "template", "spec", "topologySpreadConstraints").([]any)[0].(map[string]any)
			return map[string]any{"maxSkew": c["maxSkew"], "topologyKey": c["topologyKey"], "whenUnsatisfiable": c["whenUnsatisfiable"]}
		}
		Expect(spread(cd)).To(Equal(spread(kd)))

		Expect(field(chart.Find("Service", "ltiop"), "spec", "ports")).To(Equal(field(kust.Find("Service", "ltiop"), "spec", "ports")))
		Expect(field(chart.Find("PodDisruptionBudget", "ltiop"), "spec", "maxUnavailable")).
			To(Equal(field(kust.Find("PodDisruptionBudget", "ltiop"), "spec", "maxUnavailable")))
		Expect(field(chart.Find("Role", "ltiop-manager"), "rules")).To(Equal(field(kust.Find("Role", "ltiop-manager"), "rules")))
		Expect(field(chart.Find("Role", "ltiop-leader-election"), "rules")).
			To(Equal(field(kust.Find("Role", "ltiop-leader-election"), "rules")))
		for _, name := range []string{"ltiop-metrics-auth", "ltiop-metrics-reader"} {
			Expect(field(mustRenderChart(fullValues()).Find("ClusterRole", name), "rules")).
				To(Equal(field(kustomize(filepath.Join("testdata", "all-components")).Find("ClusterRole", name), "rules")), name)
		}
		// The ClusterRoles for people: config/rbac's rules and aggregation labels.
		for _, role := range []string{"platformregistration-editor", "platformregistration-viewer", "toolregistration-editor", "toolregistration-viewer"} {
			k, c := kust.Find("ClusterRole", "ltiop-"+role), chart.Find("ClusterRole", "ltiop-"+role)
			Expect(c).NotTo(BeNil(), role)
			Expect(field(c, "rules")).To(Equal(field(k, "rules")), role)
			for name, value := range k.GetLabels() {
				if strings.HasPrefix(name, "rbac.authorization.k8s.io/") {
					Expect(c.GetLabels()).To(HaveKeyWithValue(name, value), role)
				}
			}
		}
		Expect(mustRenderChart(map[string]any{"publicUrl": "https://lti.example.com", "rbac": map[string]any{"userRoles": false}}).
			OfKind("ClusterRole")).To(BeEmpty(), "rbac.userRoles=false renders no ClusterRole")
		// The CRDs of the chart are the generated ones, kept on uninstall (crds_test.go
		// compares the text).
		for _, crd := range kust.OfKind("CustomResourceDefinition") {
			c := chart.Find("CustomResourceDefinition", crd.GetName()).DeepCopy()
			Expect(c.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
			annotations := c.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			c.SetAnnotations(annotations)
			Expect(c.Object).To(Equal(crd.Object))
		}
	})
})
