package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwk"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/keys"
)

var seq int

func uniqueClientID() string {
	seq++
	return fmt.Sprintf("client-%d", seq)
}

func canvasBody(clientID string) map[string]any {
	return map[string]any{
		"url":                    "https://canvas.instructure.com",
		"clientId":               clientID,
		"name":                   "Canvas",
		"authenticationEndpoint": "https://sso.canvaslms.com/api/lti/authorize_redirect",
		"accesstokenEndpoint":    "https://sso.canvaslms.com/login/oauth2/token",
		"authConfig":             map[string]any{"method": "JWK_SET", "key": "https://sso.canvaslms.com/api/lti/security/jwks"},
	}
}

// createPlatform posts a registration and returns its API representation.
func createPlatform(clientID string) map[string]any {
	res := call("POST", "/api/platforms", canvasBody(clientID), bearer)
	ExpectWithOffset(1, res.Status).To(Equal(201), string(res.Raw))
	return res.JSON
}

func registration(id string) *ltiv1.PlatformRegistration {
	reg := &ltiv1.PlatformRegistration{}
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: id}, reg)).To(Succeed())
	return reg
}

// jwksKids fetches /lti/keys and returns its keys by kid.
func jwksKids() map[string]map[string]any {
	res := call("GET", "/lti/keys", nil, nil)
	ExpectWithOffset(1, res.Status).To(Equal(200))
	out := map[string]map[string]any{}
	for _, k := range res.JSON["keys"].([]any) {
		m := k.(map[string]any)
		out[m["kid"].(string)] = m
	}
	return out
}

var _ = Describe("Health", func() {
	It("answers /healthz and /readyz once the informers have synced", func() {
		Expect(call("GET", "/healthz", nil, nil).Status).To(Equal(200))
		res := call("GET", "/readyz", nil, nil)
		Expect(res.Status).To(Equal(200))
		Expect(res.JSON).To(HaveKeyWithValue("status", "ready"))
	})
})

var _ = Describe("GET /lti/keys", func() {
	It("lists the public key of every registration and drops deleted ones (T-JWKS-04)", func() {
		a := createPlatform(uniqueClientID())
		b := createPlatform(uniqueClientID())
		var kidA, kidB string
		Eventually(func() string { return registration(a["id"].(string)).Status.KID }).ShouldNot(BeEmpty())
		kidA = registration(a["id"].(string)).Status.KID
		Eventually(func() string { return registration(b["id"].(string)).Status.KID }).ShouldNot(BeEmpty())
		kidB = registration(b["id"].(string)).Status.KID

		// /lti/keys is rebuilt in the background: a set behind a change is marked no-cache,
		// and the next one has both keys and may be cached.
		var keyA jwk.Key
		Eventually(func(g Gomega) {
			res := call("GET", "/lti/keys", nil, nil)
			g.Expect(res.Header.Get("Content-Type")).To(Equal("application/jwk-set+json"))
			g.Expect(res.Header.Get("Cache-Control")).To(ContainSubstring("max-age="))
			set, err := jwk.Parse(res.Raw)
			g.Expect(err).NotTo(HaveOccurred())
			var ok bool
			keyA, ok = set.LookupKeyID(kidA)
			g.Expect(ok).To(BeTrue())
		}).Should(Succeed())
		alg, _ := keyA.Algorithm()
		Expect(alg.String()).To(Equal("RS256"))
		use, _ := keyA.KeyUsage()
		Expect(use).To(Equal("sig"))
		var pub rsa.PublicKey
		Expect(jwk.Export(keyA, &pub)).To(Succeed())
		pemA, err := keys.PublicKeyPEM(&pub)
		Expect(err).NotTo(HaveOccurred())
		Expect(pemA).To(Equal(a["publicKey"]), "the JWKS key is the one the API reported")
		Eventually(jwksKids).Should(HaveKey(kidB))
		Expect(jwksKids()[kidA]).NotTo(HaveKey("d"), "no private material")

		Expect(call("DELETE", "/api/platforms/"+a["id"].(string), nil, bearer).Status).To(Equal(204))
		Eventually(jwksKids).ShouldNot(HaveKey(kidA))
		Expect(jwksKids()).To(HaveKey(kidB))
	})
})

var _ = Describe("Platforms API", func() {
	DescribeTable("refuses requests without the right Bearer API key",
		func(header map[string]string, code string) {
			var attempted []string
			for _, req := range []struct{ method, path string }{
				{"GET", "/api/platforms"}, {"POST", "/api/platforms"}, {"GET", "/api/platforms/x"},
				{"PUT", "/api/platforms/x"}, {"DELETE", "/api/platforms/x"},
				{"POST", "/api/platforms/x/activate"}, {"POST", "/api/platforms/x/deactivate"},
				{"GET", "/admin/platforms"},
			} {
				var body any
				if req.method == "POST" || req.method == "PUT" {
					clientID := uniqueClientID()
					attempted = append(attempted, clientID)
					body = canvasBody(clientID)
				}
				res := call(req.method, req.path, body, header)
				Expect(res.Status).To(Equal(401), req.method+" "+req.path)
				Expect(res.errorCode()).To(Equal(code))
				Expect(res.JSON).To(HaveKeyWithValue("error", "Unauthorized"))
				Expect(res.JSON).To(HaveKeyWithValue("status", BeNumerically("==", 401)))
				Expect(res.Header.Get("WWW-Authenticate")).To(ContainSubstring("Bearer"))
			}
			for _, clientID := range attempted {
				var list ltiv1.PlatformRegistrationList
				Expect(k8s.List(context.Background(), &list, client.InNamespace(namespace),
					client.MatchingFields{"spec.clientId": clientID})).To(Succeed())
				Expect(list.Items).To(BeEmpty(), "nothing was created")
			}
		},
		Entry("no header", nil, "MISSING_AUTHORIZATION_HEADER"),
		Entry("another scheme", map[string]string{"Authorization": "Basic " + apiKey}, "INVALID_AUTHORIZATION_SCHEME"),
		Entry("the LTIK scheme", map[string]string{"Authorization": "LTIK-AUTH-V2 " + apiKey + ":x"}, "INVALID_AUTHORIZATION_SCHEME"),
		Entry("a wrong key", map[string]string{"Authorization": "Bearer not-the-key"}, "INVALID_API_KEY"),
		Entry("a key with a matching prefix", map[string]string{"Authorization": "Bearer " + apiKey[:10]}, "INVALID_API_KEY"),
		Entry("an empty key", map[string]string{"Authorization": "Bearer "}, "INVALID_API_KEY"),
	)

	It("creates a registration with a generated, DNS-safe ID and returns its public key", func() {
		clientID := uniqueClientID()
		res := call("POST", "/api/platforms", canvasBody(clientID), bearer)
		Expect(res.Status).To(Equal(201), string(res.Raw))
		p := res.JSON
		Expect(p).To(HaveLen(9), "exactly the fields of §2.5")
		id := p["id"].(string)
		Expect(validation.IsDNS1123Subdomain(id)).To(BeEmpty())
		Expect(id).To(HavePrefix("canvas-instructure-com-"))
		Expect(res.Header.Get("Location")).To(Equal("/api/platforms/" + id))
		Expect(p).To(HaveKeyWithValue("url", "https://canvas.instructure.com"))
		Expect(p).To(HaveKeyWithValue("clientId", clientID))
		Expect(p).To(HaveKeyWithValue("name", "Canvas"))
		Expect(p).To(HaveKeyWithValue("active", true))
		Expect(p).To(HaveKeyWithValue("authConfig", map[string]any{"method": "JWK_SET", "key": "https://sso.canvaslms.com/api/lti/security/jwks"}))
		Expect(p["publicKey"]).To(HavePrefix("-----BEGIN PUBLIC KEY-----"))

		reg := registration(id)
		Expect(string(reg.Spec.URL)).To(Equal("https://canvas.instructure.com"))
		// The key Secret exists before the response; the status write may follow it.
		Eventually(func() string { return registration(id).Status.PublicKey }).Should(Equal(p["publicKey"]))

		got := call("GET", "/api/platforms/"+id, nil, bearer)
		Expect(got.Status).To(Equal(200))
		Expect(got.JSON).To(Equal(p))
	})

	It("refuses a duplicate (url, clientId) with 409 and creates nothing", func() {
		clientID := uniqueClientID()
		first := createPlatform(clientID)
		var before ltiv1.PlatformRegistrationList
		Expect(k8s.List(context.Background(), &before, client.InNamespace(namespace))).To(Succeed())

		res := call("POST", "/api/platforms", canvasBody(clientID), bearer)
		Expect(res.Status).To(Equal(409))
		Expect(res.errorCode()).To(Equal("PLATFORM_ALREADY_REGISTERED"))
		Expect(res.errorDescription()).To(ContainSubstring(first["id"].(string)))
		var after ltiv1.PlatformRegistrationList
		Expect(k8s.List(context.Background(), &after, client.InNamespace(namespace))).To(Succeed())
		Expect(after.Items).To(HaveLen(len(before.Items)))

		// The same client on another issuer is another platform (T-QUIRK-01).
		other := canvasBody(clientID)
		other["url"] = "https://canvas.school.example"
		Expect(call("POST", "/api/platforms", other, bearer).Status).To(Equal(201))
	})

	DescribeTable("refuses invalid bodies with 400 naming the field, and creates nothing",
		func(mutate func(map[string]any), code string, fields ...string) {
			body := canvasBody(uniqueClientID())
			mutate(body)
			res := call("POST", "/api/platforms", body, bearer)
			Expect(res.Status).To(Equal(400), string(res.Raw))
			Expect(res.errorCode()).To(Equal(code))
			for _, f := range fields {
				Expect(res.errorDescription()).To(ContainSubstring(f))
			}
			Expect(call("GET", "/api/platforms?clientId="+body["clientId"].(string), nil, bearer).JSON["platforms"]).To(BeEmpty())
		},
		Entry("missing url and name", func(b map[string]any) { delete(b, "url"); delete(b, "name") }, "INVALID_PARAMETERS", "url: required", "name: required"),
		Entry("relative endpoint", func(b map[string]any) { b["authenticationEndpoint"] = "/auth" }, "INVALID_PARAMETERS", "authenticationEndpoint"),
		Entry("http outside dev mode", func(b map[string]any) { b["accesstokenEndpoint"] = "http://lms.example/token" }, "INVALID_PARAMETERS", "accesstokenEndpoint", "https"),
		Entry("missing authConfig", func(b map[string]any) { delete(b, "authConfig") }, "INVALID_PARAMETERS", "authConfig: required"),
		Entry("unknown method", func(b map[string]any) { b["authConfig"] = map[string]any{"method": "HS256", "key": "x"} }, "INVALID_PARAMETERS", "authConfig.method"),
		Entry("RSA_KEY that does not parse", func(b map[string]any) {
			b["authConfig"] = map[string]any{"method": "RSA_KEY", "key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}
		}, "INVALID_PARAMETERS", "authConfig.key"),
		Entry("JWK_KEY of the wrong type", func(b map[string]any) {
			b["authConfig"] = map[string]any{"method": "JWK_KEY", "key": `{"kty":"oct","k":"c2VjcmV0"}`}
		}, "INVALID_PARAMETERS", "authConfig.key", "not RSA"),
		Entry("an unknown field", func(b map[string]any) { b["clientSecret"] = "x" }, "INVALID_PARAMETERS", "clientSecret"),
		Entry("a field of the wrong type", func(b map[string]any) { b["name"] = 42 }, "INVALID_PARAMETERS", "name"),
		Entry("a too long clientId", func(b map[string]any) { b["name"] = strings.Repeat("n", 256) }, "INVALID_PARAMETERS", "name: at most 255"),
	)

	It("answers malformed, mistyped and oversized bodies with 400, 415 and 413", func() {
		res := call("POST", "/api/platforms", `{"url":`, bearer)
		Expect(res.Status).To(Equal(400))
		Expect(res.errorCode()).To(Equal("INVALID_REQUEST_BODY"))

		res = call("POST", "/api/platforms", `{} {}`, bearer)
		Expect(res.Status).To(Equal(400))
		Expect(res.errorCode()).To(Equal("INVALID_REQUEST_BODY"))

		res = call("POST", "/api/platforms", "url=x", map[string]string{
			"Authorization": bearer["Authorization"], "Content-Type": "application/x-www-form-urlencoded"})
		Expect(res.Status).To(Equal(415))
		Expect(res.errorCode()).To(Equal("UNSUPPORTED_MEDIA_TYPE"))

		huge := canvasBody(uniqueClientID())
		huge["name"] = strings.Repeat("x", 70<<10)
		res = call("POST", "/api/platforms", huge, bearer)
		Expect(res.Status).To(Equal(413))
		Expect(res.errorCode()).To(Equal("PAYLOAD_TOO_LARGE"))
	})

	It("lists registrations, filtered by id, url and clientId", func() {
		clientID := uniqueClientID()
		p := createPlatform(clientID)
		other := canvasBody(clientID)
		other["url"] = "https://canvas.filter.example"
		Expect(call("POST", "/api/platforms", other, bearer).Status).To(Equal(201))

		all := call("GET", "/api/platforms", nil, bearer)
		Expect(all.Status).To(Equal(200))
		Expect(len(all.JSON["platforms"].([]any))).To(BeNumerically(">=", 2))

		byClient := call("GET", "/api/platforms?clientId="+clientID, nil, bearer).JSON["platforms"].([]any)
		Expect(byClient).To(HaveLen(2))
		byBoth := call("GET", "/api/platforms?clientId="+clientID+"&url=https://canvas.instructure.com", nil, bearer).JSON["platforms"].([]any)
		Expect(byBoth).To(ConsistOf(p))
		byID := call("GET", "/api/platforms?id="+p["id"].(string), nil, bearer).JSON["platforms"].([]any)
		Expect(byID).To(ConsistOf(p))
		none := call("GET", "/api/platforms?id=nope", nil, bearer)
		Expect(none.Raw).To(MatchJSON(`{"platforms":[]}`))

		alias := call("GET", "/admin/platforms?id="+p["id"].(string), nil, bearer)
		Expect(alias.Status).To(Equal(200))
		Expect(alias.JSON["platforms"]).To(ConsistOf(p))
	})

	It("pages the list with limit and next, seeing every registration once while others come and go", func() {
		const iss = "https://canvas.paging.example"
		create := func() string {
			body := canvasBody(uniqueClientID())
			body["url"] = iss
			res := call("POST", "/api/platforms", body, bearer)
			Expect(res.Status).To(Equal(201), string(res.Raw))
			return res.JSON["id"].(string)
		}
		var ids []string
		for range 7 {
			ids = append(ids, create())
		}
		// Follows next as given, on this test's listener in place of the public URL.
		page := func(path string) ([]string, string) {
			res := call("GET", path, nil, bearer)
			Expect(res.Status).To(Equal(200), string(res.Raw))
			var got []string
			for _, p := range res.JSON["platforms"].([]any) {
				got = append(got, p.(map[string]any)["id"].(string))
			}
			next, _ := res.JSON["next"].(string)
			if next != "" {
				Expect(res.Header.Get("Link")).To(Equal("<" + next + `>; rel="next"`))
				Expect(next).To(HavePrefix(publicURL + "/api/platforms?"))
				next = strings.TrimPrefix(next, publicURL)
			} else {
				Expect(res.Header.Get("Link")).To(BeEmpty())
			}
			return got, next
		}

		seen := map[string]int{}
		got, next := page("/api/platforms?limit=3&url=" + url.QueryEscape(iss))
		Expect(got).To(HaveLen(3))
		for _, id := range got {
			seen[id]++
		}
		// Between pages: delete one served and one not yet served (the last in ID order),
		// and add one.
		sorted := slices.Sorted(slices.Values(ids))
		for _, id := range []string{sorted[0], sorted[len(sorted)-1]} {
			Expect(call("DELETE", "/api/platforms/"+id, nil, bearer).Status).To(Equal(204))
		}
		added := create()
		pages := 1
		for next != "" {
			got, next = page(next)
			pages++
			for _, id := range got {
				seen[id]++
			}
		}
		for _, id := range sorted[:len(sorted)-1] {
			Expect(seen).To(HaveKeyWithValue(id, 1), "every registration present throughout, once")
		}
		Expect(seen).NotTo(HaveKey(sorted[len(sorted)-1]), "deleted before its page came")
		if added > sorted[2] { // the first page ended at sorted[2]
			Expect(seen).To(HaveKeyWithValue(added, 1), "added ahead of the cursor")
		} else {
			Expect(seen).NotTo(HaveKey(added), "added behind the cursor")
		}
		Expect(pages).To(BeNumerically(">=", 2))

		// Unpaged, the answer has no next and no Link; a bad limit names the parameter.
		all := call("GET", "/api/platforms?url="+url.QueryEscape(iss), nil, bearer)
		Expect(all.JSON).To(HaveLen(1))
		Expect(all.JSON["platforms"]).To(HaveLen(len(ids) - 2 + 1))
		Expect(all.Header.Get("Link")).To(BeEmpty())
		bad := call("GET", "/api/platforms?limit=1001", nil, bearer)
		Expect(bad.Status).To(Equal(400))
		Expect(bad.errorCode()).To(Equal("INVALID_PARAMETERS"))
		Expect(bad.errorDescription()).To(HavePrefix("limit: "))
		forged := call("GET", "/api/platforms?cursor=eyJhIjoiYiJ9", nil, bearer)
		Expect(forged.Status).To(Equal(400))
		Expect(forged.errorDescription()).To(HavePrefix("cursor: "))
	})

	It("answers 404 for an unknown platform on every route", func() {
		for _, req := range []struct{ method, path string }{
			{"GET", "/api/platforms/nope"}, {"PUT", "/api/platforms/nope"}, {"DELETE", "/api/platforms/nope"},
			{"POST", "/api/platforms/nope/activate"}, {"POST", "/api/platforms/nope/deactivate"},
			{"GET", "/admin/platforms/nope"},
		} {
			var body any
			if req.method == "PUT" {
				body = canvasBody(uniqueClientID())
			}
			res := call(req.method, req.path, body, bearer)
			Expect(res.Status).To(Equal(404), req.method+" "+req.path)
			Expect(res.errorCode()).To(Equal("PLATFORM_NOT_FOUND"))
		}
	})

	It("updates a registration with PUT through server-side apply, visible to a direct client", func() {
		p := createPlatform(uniqueClientID())
		id := p["id"].(string)
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		Expect(err).NotTo(HaveOccurred())
		publicPEM, err := keys.PublicKeyPEM(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())

		body := canvasBody(uniqueClientID())
		body["name"] = "Canvas (renamed)"
		body["url"] = "https://canvas.renamed.example"
		body["authConfig"] = map[string]any{"method": "RSA_KEY", "key": publicPEM}
		res := call("PUT", "/api/platforms/"+id, body, bearer)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(res.JSON).To(HaveKeyWithValue("name", "Canvas (renamed)"))
		Expect(res.JSON).To(HaveKeyWithValue("url", "https://canvas.renamed.example"))
		Expect(res.JSON).To(HaveKeyWithValue("publicKey", p["publicKey"]), "the tool key survives an update")

		reg := registration(id)
		Expect(reg.Spec.Name).To(Equal("Canvas (renamed)"))
		Expect(reg.Spec.ClientID).To(Equal(body["clientId"]))
		Expect(reg.Spec.AuthConfig).To(Equal(ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: publicPEM}))
		Expect(reg.ManagedFields).To(ContainElement(And(
			HaveField("Manager", "ltiop-api"), HaveField("Operation", metav1.ManagedFieldsOperationApply))))

		// A read right after the write agrees with it.
		Expect(call("GET", "/api/platforms/"+id, nil, bearer).JSON).To(Equal(res.JSON))
		Eventually(func() string { return registration(id).Status.KID }).ShouldNot(BeEmpty())
	})

	It("refuses a PUT that is incomplete or collides with another registration", func() {
		a := createPlatform(uniqueClientID())
		b := createPlatform(uniqueClientID())

		incomplete := canvasBody(uniqueClientID())
		delete(incomplete, "accesstokenEndpoint")
		res := call("PUT", "/api/platforms/"+a["id"].(string), incomplete, bearer)
		Expect(res.Status).To(Equal(400))
		Expect(res.errorDescription()).To(ContainSubstring("accesstokenEndpoint: required"))

		res = call("PUT", "/api/platforms/"+a["id"].(string), canvasBody(b["clientId"].(string)), bearer)
		Expect(res.Status).To(Equal(409))
		Expect(res.errorCode()).To(Equal("PLATFORM_ALREADY_REGISTERED"))
		Expect(registration(a["id"].(string)).Spec.ClientID).To(Equal(a["clientId"]), "nothing changed")
	})

	It("deactivates and activates a registration", func() {
		p := createPlatform(uniqueClientID())
		id := p["id"].(string)

		res := call("POST", "/api/platforms/"+id+"/deactivate", nil, bearer)
		Expect(res.Status).To(Equal(200), string(res.Raw))
		Expect(res.JSON).To(HaveKeyWithValue("active", false))
		Expect(registration(id).Spec.IsActive()).To(BeFalse())
		Expect(call("GET", "/api/platforms/"+id, nil, bearer).JSON).To(HaveKeyWithValue("active", false))

		// A PUT without "active" keeps it deactivated.
		body := canvasBody(p["clientId"].(string))
		body["name"] = "renamed"
		Expect(call("PUT", "/api/platforms/"+id, body, bearer).JSON).To(HaveKeyWithValue("active", false))

		res = call("POST", "/admin/platforms/"+id+"/activate", nil, bearer)
		Expect(res.Status).To(Equal(200))
		Expect(res.JSON).To(HaveKeyWithValue("active", true))
		Expect(registration(id).Spec.IsActive()).To(BeTrue())
	})

	It("deletes a registration; its key Secret is owned by it for garbage collection", func() {
		p := createPlatform(uniqueClientID())
		id := p["id"].(string)
		secret := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: controllers.KeySecretName(id)}, secret)).To(Succeed())
		Expect(secret.OwnerReferences).To(ContainElement(HaveField("Name", id)))

		res := call("DELETE", "/api/platforms/"+id, nil, bearer)
		Expect(res.Status).To(Equal(204))
		Expect(res.Raw).To(BeEmpty())
		Expect(call("GET", "/api/platforms/"+id, nil, bearer).Status).To(Equal(404))
		Expect(call("DELETE", "/api/platforms/"+id, nil, bearer).Status).To(Equal(404))
	})

	It("shows registrations made with kubectl and follows the API key Secret when it rotates", func() {
		const rotatedKey = "rotated-key-0123456789-abcdefghijklmnop"
		reg := &ltiv1.PlatformRegistration{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "made-with-kubectl"},
			Spec: ltiv1.PlatformRegistrationSpec{
				URL: "https://moodle.example.edu", ClientID: "abc", Name: "Moodle",
				AuthenticationEndpoint: "https://moodle.example.edu/mod/lti/auth.php",
				AccesstokenEndpoint:    "https://moodle.example.edu/mod/lti/token.php",
				AuthConfig:             ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://moodle.example.edu/mod/lti/certs.php"},
			},
		}
		Expect(k8s.Create(context.Background(), reg)).To(Succeed())
		Eventually(func() string {
			return fmt.Sprint(call("GET", "/api/platforms/made-with-kubectl", nil, bearer).JSON["publicKey"])
		}).Should(HavePrefix("-----BEGIN PUBLIC KEY-----"))

		secret := &corev1.Secret{}
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "ltiop-api-key"}, secret)).To(Succeed())
		secret.Data["apiKey"] = []byte(rotatedKey)
		Expect(k8s.Update(context.Background(), secret)).To(Succeed())
		DeferCleanup(func() {
			secret.Data["apiKey"] = []byte(apiKey)
			Expect(k8s.Update(context.Background(), secret)).To(Succeed())
			Eventually(func() int { return call("GET", "/api/platforms", nil, bearer).Status }).Should(Equal(200))
		})
		Eventually(func() int {
			return call("GET", "/api/platforms", nil, map[string]string{"Authorization": "Bearer " + rotatedKey}).Status
		}).Should(Equal(200))
		Expect(call("GET", "/api/platforms", nil, bearer).errorCode()).To(Equal("INVALID_API_KEY"))
	})
})

var _ = Describe("Routing errors", func() {
	It("answers an unknown path with 404 and a wrong method with 405, in the envelope", func() {
		res := call("GET", "/api/nothing-here", nil, bearer)
		Expect(res.Status).To(Equal(404))
		Expect(res.errorCode()).To(Equal("NOT_FOUND"))
		Expect(res.JSON).To(HaveKeyWithValue("error", "Not Found"))

		res = call("PATCH", "/api/platforms/x", "{}", bearer)
		Expect(res.Status).To(Equal(405))
		Expect(res.errorCode()).To(Equal("METHOD_NOT_ALLOWED"))
		Expect(res.Header.Get("Allow")).To(ContainSubstring("PUT"))
	})

	It("tags every response with a request id", func() {
		Expect(call("GET", "/healthz", nil, nil).Header.Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{32}$`))
	})
})
