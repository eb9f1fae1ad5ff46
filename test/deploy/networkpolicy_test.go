package deploy

import (
	"net/netip"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// egressAllows tells whether policy lets ltiop's pods open a TCP connection to addr (an
// IP address outside any selected pod): a rule with no "to" reaches everything; an ipBlock
// reaches its cidr but its excepts. Named ports are left out: the policies name egress
// ports by number.
func egressAllows(policy *unstructured.Unstructured, addr netip.AddrPort) bool {
	rules, _, _ := unstructured.NestedSlice(policy.Object, "spec", "egress")
	for _, r := range rules {
		rule := r.(map[string]any)
		if ports, ok := rule["ports"].([]any); ok && len(ports) > 0 {
			match := false
			for _, p := range ports {
				port := p.(map[string]any)
				if portNumber(port["port"]) == int64(addr.Port()) && port["protocol"] != "UDP" {
					match = true
				}
			}
			if !match {
				continue
			}
		}
		to, ok := rule["to"].([]any)
		if !ok || len(to) == 0 {
			return true
		}
		for _, peer := range to {
			block, ok := peer.(map[string]any)["ipBlock"].(map[string]any)
			if !ok {
				continue // a pod or namespace selector: selected pods, not any address
			}
			if netip.MustParsePrefix(block["cidr"].(string)).Contains(addr.Addr()) && !excepted(block, addr.Addr()) {
				return true
			}
		}
	}
	return false
}

// portNumber reads a numeric port as YAML decoding left it; a named port is -1.
func portNumber(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return -1
}

func excepted(block map[string]any, a netip.Addr) bool {
	except, _ := block["except"].([]any)
	for _, e := range except {
		if netip.MustParsePrefix(e.(string)).Contains(a) {
			return true
		}
	}
	return false
}

// The gap of issue #28 item 5: the shipped NetworkPolicies allowed egress anywhere on 443,
// 6443 and 53, in-cluster Services included, although docs/security.md calls the policy
// a second line of defence behind the SSRF guard. A connection into the cluster, the node's
// link-local addresses or CGNAT must be refused by the policy itself.
var _ = Describe("The NetworkPolicies refuse egress into the cluster", func() {
	inside := []string{
		"10.96.0.10:443", "10.244.3.7:443", "172.20.0.1:443", "192.168.1.10:443", // Services, pods, nodes
		"169.254.169.254:443", "100.64.0.1:443", "127.0.0.1:443", // metadata, CGNAT, loopback
		"10.96.0.1:6443", "10.244.3.7:6443", "10.244.3.7:53", "10.96.0.10:8080",
		"[fd00::10]:443", "[fe80::1]:443",
	}
	check := func(policy *unstructured.Unstructured, apiServer string) {
		Expect(policy).NotTo(BeNil())
		for _, a := range inside {
			Expect(egressAllows(policy, netip.MustParseAddrPort(a))).To(BeFalse(), "egress to %s is allowed", a)
		}
		for _, a := range []string{"203.0.113.10:443", "[2001:db8::10]:443", apiServer} {
			Expect(egressAllows(policy, netip.MustParseAddrPort(a))).To(BeTrue(), "egress to %s is refused", a)
		}
	}

	It("in the chart", func() {
		check(mustRenderChart(fullValues()).Find("NetworkPolicy", "ltiop"), "10.0.0.1:6443")
	})

	It("in config/network-policy, once the API server's address is patched in", func() {
		check(kustomize(filepath.Join("testdata", "all-components")).Find("NetworkPolicy", "ltiop"), "10.0.0.1:6443")
	})

	It("the chart refuses to render the policy without the API server's address", func() {
		values := fullValues()
		values["networkPolicy"].(map[string]any)["apiServer"] = map[string]any{"cidrs": []any{}, "port": 6443}
		_, err := renderChart(values)
		Expect(err).To(MatchError(ContainSubstring("networkPolicy.apiServer.cidrs")))
	})
})
