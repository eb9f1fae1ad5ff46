package lti

import (
	"context"
	"slices"
	"time"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// Platform Notification Service (LTI PNS 1.0): the launch claim that names the platform's
// notice-handler endpoint, the notice claim of a notice JWT, and the notice types ltiop
// knows by name. Rule IDs T-PNS-* are listed in docs/notices.md.
const (
	ClaimPlatformNotificationService = "https://purl.imsglobal.org/spec/lti/claim/platformnotificationservice"
	ClaimNotice                      = "https://purl.imsglobal.org/spec/lti/claim/notice"
	ClaimOriginContexts              = "https://purl.imsglobal.org/spec/lti/claim/origin_contexts"

	NoticeHelloWorld               = "LtiHelloWorldNotice"
	NoticeContextCopy              = "LtiContextCopyNotice"
	NoticeAssetProcessorSubmission = "LtiAssetProcessorSubmissionNotice"
	CodeInvalidNotice              = "INVALID_NOTICE"
	defaultNoticeMaxAge            = time.Hour
	noticeTimestampLayout          = time.RFC3339
)

// KnownNoticeTypes are the notice types ltiop names in its documentation and dynamic
// registration; any other type passes through all the same (T-PNS-03).
var KnownNoticeTypes = []string{NoticeHelloWorld, NoticeContextCopy, NoticeAssetProcessorSubmission}

// PNSClaim is the platformnotificationservice claim of a launch.
type PNSClaim struct {
	URL                  string   // platform_notification_service_url
	ServiceVersions      []string // service_versions
	Scope                []string // scope
	NoticeTypesSupported []string // notice_types_supported
}

// DecodePNS reads the platformnotificationservice claim from a launch's claims (Claims.Raw),
// or returns nil when the launch has none or it names no URL. raw must be one JSON object.
func DecodePNS(raw []byte) *PNSClaim {
	var out *PNSClaim
	sc := newScanner(string(raw))
	if !enterObject(sc) {
		return nil
	}
	for sc.NextMember() {
		if sc.Key() != ClaimPlatformNotificationService {
			continue
		}
		out = nil
		if !enterObject(sc) {
			continue
		}
		p := &PNSClaim{}
		for sc.NextMember() {
			switch sc.Key() {
			case "platform_notification_service_url":
				p.URL = readOptString(sc)
			case "service_versions":
				p.ServiceVersions, _ = readStringList(sc, false)
			case "scope":
				p.Scope, _ = readStringList(sc, false)
			case "notice_types_supported":
				p.NoticeTypesSupported, _ = readStringList(sc, false)
			}
		}
		if p.URL != "" {
			out = p
		}
	}
	return out
}

// Notice is the notice claim of a notice JWT: what happened, and its identity.
type Notice struct {
	ID        string // unique per notice: ltiop drops an id it has already delivered (T-PNS-06)
	Type      string // LtiHelloWorldNotice, …; unknown types pass through
	Timestamp string // when it happened, RFC 3339, as sent
}

// ValidateNotice verifies one notice JWT of a batch the platform posted to ltiop's notice
// endpoint, with the machinery of Validate: RS256 signature by the platform's key set, kid,
// iss, aud, azp, exp and iat (T-PNS-01), then LTI version 1.3.0, the deployment (T-PNS-02)
// and the notice claim with its id, type and timestamp (T-PNS-03). A notice has no nonce,
// no message type and no user: those rules do not apply. p.MaxAge zero means one hour
// (platforms sign notices for an hour and may send them again within it).
func ValidateNotice(ctx context.Context, token string, keys KeyFunc, p Policy) (*Claims, *Notice, *apierr.Error) {
	t, e := verifySigned(ctx, token, keys)
	if e != nil {
		return nil, nil, e
	}
	c := t.claims
	if p.MaxAge <= 0 {
		p.MaxAge = defaultNoticeMaxAge
	}
	if e := checkEnvelope(c, &p); e != nil {
		return nil, nil, e
	}
	// T-PNS-04.
	if c.Version != LTIVersion {
		return nil, nil, newError(400, CodeInvalidLTIVersion, "T-PNS-04", "The notice's LTI version must be 1.3.0.")
	}
	// T-PNS-02.
	switch {
	case c.bad&badDeploymentID != 0:
		return nil, nil, c.errorFor(badDeploymentID)
	case c.DeploymentID == "":
		return nil, nil, newError(400, CodeMissingDeploymentID, "T-PNS-02", "The notice has no deployment_id claim.")
	case len(c.DeploymentID) > MaxIdentifierLength:
		return nil, nil, errTooLong("deployment_id", "T-PNS-02")
	case len(p.DeploymentIDs) > 0 && !slices.Contains(p.DeploymentIDs, c.DeploymentID):
		return nil, nil, newError(403, CodeUnknownDeployment, "T-PNS-02", "The notice's deployment is not known for this platform registration.")
	}
	n, e := decodeNotice(t.doc)
	if e != nil {
		return nil, nil, e
	}
	return c, n, nil
}

// decodeNotice reads and checks the notice claim (T-PNS-03).
func decodeNotice(claims string) (*Notice, *apierr.Error) {
	bad := func(d string) *apierr.Error { return newError(400, CodeInvalidNotice, "T-PNS-03", d) }
	var n *Notice
	var fault *apierr.Error
	sc := newScanner(claims)
	for ok := enterObject(sc); ok && sc.NextMember(); {
		if sc.Key() != ClaimNotice {
			continue
		}
		n, fault = &Notice{}, nil
		if !enterObject(sc) {
			fault = bad("The notice claim must be an object.")
			continue
		}
		for sc.NextMember() {
			switch sc.Key() {
			case "id":
				n.ID = readOptString(sc)
			case "type":
				n.Type = readOptString(sc)
			case "timestamp":
				n.Timestamp = readOptString(sc)
			}
		}
	}
	switch {
	case fault != nil:
		return nil, fault
	case n == nil:
		return nil, bad("The notice JWT has no notice claim.")
	case n.ID == "":
		return nil, bad("The notice claim has no id.")
	case len(n.ID) > MaxIdentifierLength:
		return nil, bad("The notice id exceeds 255 characters.")
	case n.Type == "":
		return nil, bad("The notice claim has no type.")
	case len(n.Type) > MaxIdentifierLength:
		return nil, bad("The notice type exceeds 255 characters.")
	case n.Timestamp == "":
		return nil, bad("The notice claim has no timestamp.")
	}
	if _, err := time.Parse(noticeTimestampLayout, n.Timestamp); err != nil {
		return nil, bad("The notice timestamp is not an RFC 3339 date-time.")
	}
	return n, nil
}
