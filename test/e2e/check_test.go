package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
)

var _ = Describe("POST /api/platforms/{id}/check", func() {
	probe := func(res response, part string) map[string]any {
		p, _ := res.JSON[part].(map[string]any)
		return p
	}

	It("finds the simulator's key set and endpoints answering", func() {
		lms := newLMS()
		lms.EnableServices(baseURL + paths.KeySet(lms.ID)) // the simulator's token endpoint answers from now on
		res := call("POST", "/api/platforms/"+lms.ID+"/check", nil, bearer)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(probe(res, "keySet")).To(HaveKeyWithValue("ok", true))
		Expect(probe(res, "keySet")).To(HaveKeyWithValue("reason", "OK"))
		Expect(probe(res, "keySet")["detail"]).To(ContainSubstring("1 usable RSA signing key"))
		Expect(probe(res, "authenticationEndpoint")).To(HaveKeyWithValue("ok", true))
		Expect(probe(res, "accesstokenEndpoint")).To(HaveKeyWithValue("ok", true))

		alias := call("POST", "/admin/platforms/"+lms.ID+"/check", nil, bearer)
		Expect(alias.Status).To(Equal(200))
	})

	It("says NotFound when the key set URL answers 404, and NotFound for a missing endpoint", func() {
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) {
			s.AuthConfig.Key = string(s.URL) + "/jwks-moved"
			s.AccesstokenEndpoint = s.URL + "/token-moved"
		})
		res := call("POST", "/api/platforms/"+lms.ID+"/check", nil, bearer)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(probe(res, "keySet")).To(HaveKeyWithValue("ok", false))
		Expect(probe(res, "keySet")).To(HaveKeyWithValue("reason", "NotFound"))
		Expect(probe(res, "accesstokenEndpoint")).To(HaveKeyWithValue("reason", "NotFound"))
		Expect(probe(res, "authenticationEndpoint")).To(HaveKeyWithValue("ok", true))
	})

	It("goes through the SSRF guard: a key set URL at the cloud metadata address is NotAllowed, never fetched", func() {
		lms := newLMS(func(s *ltiv1.PlatformRegistrationSpec) {
			s.AuthConfig.Key = "http://169.254.169.254/latest/meta-data/"
		})
		res := call("POST", "/api/platforms/"+lms.ID+"/check", nil, bearer)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(probe(res, "keySet")).To(HaveKeyWithValue("reason", "NotAllowed"))
	})

	It("needs the API key and a known platform", func() {
		Expect(call("POST", "/api/platforms/nope/check", nil, nil).Status).To(Equal(401))
		res := call("POST", "/api/platforms/nope/check", nil, bearer)
		Expect(res.Status).To(Equal(404))
		Expect(res.errorCode()).To(Equal("PLATFORM_NOT_FOUND"))
	})
})
