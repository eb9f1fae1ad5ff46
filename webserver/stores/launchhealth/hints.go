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
	lti.CodeUnknownKID:            "The id_token is signed with a key the LMS's key set does not list: check the registration's key set URL (authConfig.key), or wait for the LMS's key rotation to publish.",
	lti.CodeKeySetUnavailable:     "ltiop could not fetch the LMS's key set: run POST /api/platforms/{id}/check and fix the URL, TLS or network path it names.",
	lti.CodeInvalidSignature:      "The id_token's signature does not verify with the LMS's key: the registration may name another LMS's key set or key.",
	lti.CodeMissingKID:            "The id_token has no kid: configure the LMS to publish a key set (JWK_SET).",
	lti.CodeInvalidAlgorithm:      "The id_token is not signed with RS256: configure the LMS to use RS256.",
	lti.CodeIssuerMismatch:        "The id_token's iss differs from the registration's url: make spec.url the issuer the LMS sends, byte for byte.",
	lti.CodeAudienceMismatch:      "The id_token's aud is not the registration's clientId: make spec.clientId the client id the LMS issued to this tool.",
	lti.CodeAzpMismatch:           "The id_token's azp is not the registration's clientId: make spec.clientId the client id the LMS issued to this tool.",
	lti.CodeTokenExpired:          "The id_token had expired: check the LMS server's clock (NTP).",
	lti.CodeInvalidIAT:            "The id_token was issued in the future: check the LMS server's clock (NTP).",
	lti.CodeUnknownDeployment:     "The LMS launched from a deployment the registration does not list: add it to spec.deploymentIds, or empty that list to accept any.",
	lti.CodeDeploymentMismatch:    "The id_token's deployment_id differs from the login request's lti_deployment_id: if the LMS sent both, an LMS misconfiguration, report it to the LMS vendor.",
	lti.CodeMissingDeploymentID:   "The LMS sent no deployment_id: check the tool's placement/deployment in the LMS.",
	lti.CodeTargetLinkURIMismatch: "The id_token's target_link_uri differs from the login's: check the tool's launch URLs in the LMS.",
	lti.CodeMissingClaim:          "The LMS omitted a required LTI claim: check the tool's privacy/placement settings in the LMS.",
	lti.CodeInvalidMessageType:    "The LMS sent a message type ltiop does not handle: check the placement configured in the LMS.",
	lti.CodeInvalidLTIVersion:     "The LMS did not send LTI version 1.3.0: configure the tool as an LTI 1.3 tool.",
	lti.CodeBrowserBinding:        "The browser that finished the login did not start it (third-party cookies blocked and no platform storage): open the tool in a new window, or enable LTI platform storage in the LMS.",
	lti.CodeStateExpired:          "The login took longer than 10 minutes, or the LMS answered slowly: retry; if it persists check the LMS's authorization endpoint.",
	lti.CodeStateReused:           "A launch form was submitted twice (back button or a double post): usually harmless.",
	lti.CodeNonceReused:           "An id_token was submitted twice: usually harmless; repeated, it is a replay attempt.",
	lti.CodeLaunchNotConfigured:   "ltiop has no launch URL for this message type: the operator must set launchUrl in ltiop's configuration.",
}

// loginHints are the hints of the refusals of a login (StepLogin). A login is not signed:
// they say what a login request claimed, never that the LMS sent it, and quote nothing of it.
var loginHints = map[string]string{
	lti.CodeUnknownDeployment: "A login request named a deployment the registration does not list. Logins are not signed, so ltiop does not repeat what one sent: if the LMS launched from a new deployment, add its deployment id (the LMS shows it in the tool's configuration) to spec.deploymentIds, or empty that list to accept any.",
	lti.CodeInvalidTarget:     "A login request named a target_link_uri outside ltiop: if the LMS sent it, set the tool's launch URL in the LMS to the registration's status.launchUrl.",
}

// Hint is the one-line advice for code of a launch (an id_token); for deployment refusals
// it names the deployment the LMS sent (sent: from the verified id_token, when the refusal
// carried it) and the deployments the registration accepts: registration data, never a user's.
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
	return h + registered(reg)
}

// LoginHint is the one-line advice for code of a login (loginHints); for deployment
// refusals it names the deployments the registration accepts.
func LoginHint(code string, reg *ltiv1.PlatformRegistration) string {
	h, ok := loginHints[code]
	if !ok {
		return "A login request was refused; logins are not signed, anyone can send one. See docs/troubleshooting.md for this code."
	}
	if code != lti.CodeUnknownDeployment {
		return h
	}
	return h + registered(reg)
}

// registered is " Registered: "1", "2"." for the first five deployment ids reg accepts,
// "" when it accepts any.
func registered(reg *ltiv1.PlatformRegistration) string {
	if reg == nil || len(reg.Spec.DeploymentIDs) == 0 {
		return ""
	}
	ids := make([]string, 0, 6)
	for _, id := range reg.Spec.DeploymentIDs[:min(5, len(reg.Spec.DeploymentIDs))] {
		ids = append(ids, strconv.Quote(id))
	}
	if len(reg.Spec.DeploymentIDs) > 5 {
		ids = append(ids, "…")
	}
	return " Registered: " + strings.Join(ids, ", ") + "."
}
