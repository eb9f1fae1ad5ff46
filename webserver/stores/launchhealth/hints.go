package launchhealth

import (
	"strconv"
	"strings"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// hints say, per refusal code, what the LMS administrator can do: one line each, the
// same advice as docs/troubleshooting.md.
var hints = map[string]string{
	lti.CodeUnknownKID:            "The LMS signed with a key its key set does not list: check the registration's key set URL (authConfig.key), or wait for the LMS's key rotation to publish.",
	lti.CodeKeySetUnavailable:     "ltiop could not fetch the LMS's key set: run POST /api/platforms/{id}/check and fix the URL, TLS or network path it names.",
	lti.CodeInvalidSignature:      "The id_token's signature does not verify with the LMS's key: the registration may name another LMS's key set or key.",
	lti.CodeMissingKID:            "The LMS sent an id_token without a kid: configure the LMS to publish a key set (JWK_SET).",
	lti.CodeInvalidAlgorithm:      "The LMS signed with another algorithm than RS256: configure it to use RS256.",
	lti.CodeIssuerMismatch:        "The id_token's iss differs from the registration's url: make spec.url the issuer the LMS sends, byte for byte.",
	lti.CodeAudienceMismatch:      "The id_token's aud is not the registration's clientId: make spec.clientId the client id the LMS issued to this tool.",
	lti.CodeAzpMismatch:           "The id_token's azp is not the registration's clientId: make spec.clientId the client id the LMS issued to this tool.",
	lti.CodeTokenExpired:          "The id_token had expired: check the LMS server's clock (NTP).",
	lti.CodeInvalidIAT:            "The id_token was issued in the future: check the LMS server's clock (NTP).",
	lti.CodeUnknownDeployment:     "The LMS launched from a deployment the registration does not list: add it to spec.deploymentIds, or empty that list to accept any.",
	lti.CodeDeploymentMismatch:    "The LMS sent another deployment_id in the id_token than in the login: an LMS misconfiguration, report it to the LMS vendor.",
	lti.CodeMissingDeploymentID:   "The LMS sent no deployment_id: check the tool's placement/deployment in the LMS.",
	lti.CodeTargetLinkURIMismatch: "The id_token's target_link_uri differs from the login's: check the tool's launch URLs in the LMS.",
	lti.CodeMissingClaim:          "The LMS omitted a required LTI claim: check the tool's privacy/placement settings in the LMS.",
	lti.CodeInvalidMessageType:    "The LMS sent a message type ltiop does not handle: check the placement configured in the LMS.",
	lti.CodeInvalidLTIVersion:     "The LMS did not send LTI version 1.3.0: configure the tool as an LTI 1.3 tool.",
	lti.CodeBrowserBinding:        "The browser that finished the login did not start it (third-party cookies blocked and no platform storage): open the tool in a new window, or enable LTI platform storage in the LMS.",
	lti.CodeStateExpired:          "The login took longer than 10 minutes, or the LMS answered slowly: retry; if it persists check the LMS's authorization endpoint.",
	lti.CodeStateReused:           "A launch form was submitted twice (back button or a double post): usually harmless.",
	lti.CodeNonceReused:           "An id_token was submitted twice: usually harmless; repeated, it is a replay attempt.",
	lti.CodeInvalidTarget:         "The LMS's login named a target_link_uri outside ltiop: set the tool's launch URL in the LMS to the registration's status.launchUrl.",
	lti.CodeLaunchNotConfigured:   "ltiop has no launch URL for this message type: the operator must set launchUrl in ltiop's configuration.",
}

// Hint is the one-line advice for code; for deployment refusals it names the deployment
// the LMS sent (sent, when the refusal carried it) and the deployments the registration
// accepts: registration data, never a user's.
func Hint(code, sent string, reg *ltiv1.PlatformRegistration) string {
	h, ok := hints[code]
	if !ok {
		return "See docs/troubleshooting.md for this code."
	}
	if code != lti.CodeUnknownDeployment {
		return h
	}
	if sent != "" {
		h += " The LMS sent " + strconv.Quote(sent) + "."
	}
	if reg != nil && len(reg.Spec.DeploymentIDs) > 0 {
		ids := make([]string, 0, 6)
		for _, id := range reg.Spec.DeploymentIDs[:min(5, len(reg.Spec.DeploymentIDs))] {
			ids = append(ids, strconv.Quote(id))
		}
		if len(reg.Spec.DeploymentIDs) > 5 {
			ids = append(ids, "…")
		}
		h += " Registered: " + strings.Join(ids, ", ") + "."
	}
	return h
}
