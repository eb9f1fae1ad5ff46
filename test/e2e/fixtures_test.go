package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// fixtureDir holds real Canvas, Blackboard, Moodle and spec payloads (decoded, unsigned),
// copied from the shared fixtures into the repository's testdata/lms.
var fixtureDir = filepath.Join(testenv.Root(), "testdata", "lms")

// launchFixtures are the id_token payloads among the fixtures.
func launchFixtures() map[string]map[string]any {
	out := map[string]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		var claims map[string]any
		if json.Unmarshal(data, &claims) != nil {
			continue
		}
		switch claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] {
		case "LtiResourceLinkRequest", "LtiDeepLinkingRequest": // not the deep-linking responses
			out[filepath.Base(f)] = claims
		}
	}
	return out
}

var _ = Describe("Real LMS payloads", func() {
	It("launches every fixture, re-signed, and maps it to /api/idtoken", func() {
		fixtures := launchFixtures()
		Expect(fixtures).To(HaveKey("canvas_rlr_teacher.json"))
		Expect(fixtures).To(HaveKey("moodle_rlr.json"))
		Expect(fixtures).To(HaveKey("blackboard_rlr.json"))
		for name, fixture := range fixtures {
			By(name)
			lms := newLMS()
			lms.Customize = func(claims, header map[string]any) {
				// Keep what ties the token to this login and platform; take everything else
				// from the fixture exactly as the LMS sent it.
				keep := map[string]any{}
				for _, k := range []string{"iss", "aud", "nonce", "iat", "exp",
					"https://purl.imsglobal.org/spec/lti/claim/deployment_id",
					"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"} {
					keep[k] = claims[k]
				}
				for k := range claims {
					delete(claims, k)
				}
				for k, v := range fixture {
					claims[k] = v
				}
				if _, ok := claims["azp"]; ok {
					claims["azp"] = keep["aud"]
				}
				isDL := claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == "LtiDeepLinkingRequest"
				_, hasTarget := fixture["https://purl.imsglobal.org/spec/lti/claim/target_link_uri"]
				for k, v := range keep {
					if k == "https://purl.imsglobal.org/spec/lti/claim/target_link_uri" && isDL && !hasTarget {
						continue // §12.3: a deep-linking request may lack it
					}
					claims[k] = v
				}
			}
			res := newBrowser().launch(lms, "")
			Expect(res.Status).To(Equal(303), name+": "+res.Body)
			tok := idToken(res.Ltik)
			Expect(tok.Status).To(Equal(200), name)

			user := tok.JSON["user"].(map[string]any)
			Expect(user["id"]).To(Equal(fixture["sub"]), name)
			Expect(user["roles"]).NotTo(BeNil(), name)
			platform := tok.JSON["platform"].(map[string]any)
			Expect(platform).To(HaveKeyWithValue("deploymentId", "deployment-1"), name)
			launch := tok.JSON["launch"].(map[string]any)
			Expect(launch["type"]).To(Equal(fixture["https://purl.imsglobal.org/spec/lti/claim/message_type"]), name)
			if rl, ok := fixture["https://purl.imsglobal.org/spec/lti/claim/resource_link"].(map[string]any); ok && launch["type"] == "LtiResourceLinkRequest" {
				Expect(launch["resourceLink"]).To(HaveKeyWithValue("id", rl["id"]), name)
			}
			if strings.Contains(name, "dl_request") {
				dl := tok.JSON["services"].(map[string]any)["deepLinking"].(map[string]any)
				Expect(dl).To(HaveKeyWithValue("available", true), name)
			}
		}
	})
})
