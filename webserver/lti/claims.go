package lti

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/ltiop/ltiop/internal/jsonscan"
	"github.com/ltiop/ltiop/webserver/apierr"
)

// Claim names of LTI 1.3 and LTI Advantage (CORE §5, DL §4.4, NRPS, AGS).
const (
	ClaimMessageType         = "https://purl.imsglobal.org/spec/lti/claim/message_type"
	ClaimVersion             = "https://purl.imsglobal.org/spec/lti/claim/version"
	ClaimDeploymentID        = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
	ClaimTargetLinkURI       = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
	ClaimResourceLink        = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
	ClaimRoles               = "https://purl.imsglobal.org/spec/lti/claim/roles"
	ClaimContext             = "https://purl.imsglobal.org/spec/lti/claim/context"
	ClaimToolPlatform        = "https://purl.imsglobal.org/spec/lti/claim/tool_platform"
	ClaimLaunchPresentation  = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"
	ClaimCustom              = "https://purl.imsglobal.org/spec/lti/claim/custom"
	ClaimLIS                 = "https://purl.imsglobal.org/spec/lti/claim/lis"
	ClaimRoleScopeMentor     = "https://purl.imsglobal.org/spec/lti/claim/role_scope_mentor"
	ClaimForUser             = "https://purl.imsglobal.org/spec/lti/claim/for_user"
	ClaimNRPS                = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
	ClaimAGS                 = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
	ClaimDeepLinkingSettings = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
)

// Message types this package validates (T-TOK-18) and the LTI version it speaks (T-TOK-17).
const (
	MessageResourceLink = "LtiResourceLinkRequest"
	MessageDeepLinking  = "LtiDeepLinkingRequest"
	// MessageSubmissionReview asks the tool to show a learner's submission (AGS
	// "Submission Review Message"); its extra rules are in submissionreview.go.
	MessageSubmissionReview = "LtiSubmissionReviewRequest"
	LTIVersion              = "1.3.0"
)

// MaxIdentifierLength bounds deployment_id, resource_link.id, context.id and sub
// (CORE: "MUST NOT exceed 255 ASCII characters"); measured in bytes.
const MaxIdentifierLength = 255

// Audience is the aud claim. Platforms send a string (Canvas, Moodle, Blackboard)
// or an array (Schoology, the spec examples): both decode to a slice (T-QUIRK-02).
type Audience []string

// UnmarshalJSON accepts a string, an array of strings, or null.
func (a *Audience) UnmarshalJSON(b []byte) error {
	s := string(b)
	if !jsonscan.Valid(s) {
		return errors.New("lti: aud is not valid JSON")
	}
	aud, ok := decodeAudience(trimJSON(s))
	if !ok {
		return errors.New("lti: aud must be a string or an array of strings")
	}
	*a = aud
	return nil
}

func decodeAudience(raw string) (Audience, bool) {
	switch kindOf(raw) {
	case kindString:
		return Audience{decodeString(raw)}, true
	case kindNull:
		return nil, true
	case kindArray:
		out := make(Audience, 0, 2)
		for it := newArrayIter(raw); ; {
			v, ok := it.next()
			if !ok {
				return out, true
			}
			s, isStr := asString(v)
			if !isStr {
				return nil, false
			}
			out = append(out, s)
		}
	}
	return nil, false
}

// Contains reports whether s is one of the audiences.
func (a Audience) Contains(s string) bool {
	for _, v := range a {
		if v == s {
			return true
		}
	}
	return false
}

// ResourceLink is the resource_link claim (CORE §5.3.5).
type ResourceLink struct {
	ID, Title, Description string
}

// Context is the context claim (CORE §5.4.1). Type holds the values as sent; a
// single string is accepted as a one-element list.
type Context struct {
	ID, Label, Title string
	Type             []string
}

// ToolPlatform is the tool_platform claim (CORE §5.4.2).
type ToolPlatform struct {
	GUID, Name, ContactEmail, Description, URL, ProductFamilyCode, Version string
}

// LaunchPresentation is the launch_presentation claim (CORE §5.4.4). Width and
// Height are 0 when absent; numeric strings are accepted.
type LaunchPresentation struct {
	DocumentTarget, ReturnURL, Locale string
	Width, Height                     int
}

// LIS is the lis claim (CORE §5.4.5).
type LIS struct {
	PersonSourcedID, CourseOfferingSourcedID, CourseSectionSourcedID string
}

// NRPSClaim is the Names and Role Provisioning Services claim.
type NRPSClaim struct {
	ContextMembershipsURL string
	ServiceVersions       []string
}

// AGSClaim is the Assignment and Grade Services endpoint claim. URLs are opaque:
// use them as given (T-QUIRK-05).
type AGSClaim struct {
	Scope     []string
	LineItems string // the line-items container URL
	LineItem  string // the single line item of this resource link, if any
}

// DeepLinkingSettings is the deep_linking_settings claim (DL §4.4.1). The
// accept_* lists accept an array or a comma-separated string (Moodle sends
// accept_media_types as an array, Canvas and Blackboard as a string); the
// booleans accept true/false or "true"/"false"; nil means absent.
type DeepLinkingSettings struct {
	DeepLinkReturnURL                 string
	AcceptTypes                       []string
	AcceptPresentationDocumentTargets []string
	AcceptMediaTypes                  []string
	AcceptMultiple                    *bool
	AcceptLineItem                    *bool
	AutoCreate                        *bool
	Title, Text                       string
	// Data must be echoed byte-exact in the response when DataPresent (T-DL-03).
	Data        string
	DataPresent bool
}

// ForUser is the for_user claim (submission review, data privacy launches).
type ForUser struct {
	UserID, PersonSourcedID, Name, GivenName, FamilyName, Email string
	Roles                                                       []string
}

// Claims is a decoded id_token payload. The decode is tolerant (T-QUIRK-04): an
// optional claim or member with an unexpected JSON type is left at its zero value
// instead of failing; unknown claims and members are ignored (T-TOK-23); null is
// treated as absent; when a claim appears twice, the last one wins (like
// encoding/json). String fields hold the values as sent.
type Claims struct {
	Issuer, Subject, AuthorizedParty, Nonce string
	Audience                                Audience

	// ExpiresAt and IssuedAt are unix seconds; HasExp/HasIat are false when the
	// claim is absent or not a JSON number.
	ExpiresAt, IssuedAt int64
	HasExp, HasIat      bool

	Name, GivenName, FamilyName, MiddleName, Email, Picture, Locale string

	MessageType, Version, DeploymentID, TargetLinkURI string

	ResourceLink *ResourceLink
	// Roles holds the string elements of the roles claim as sent (empty strings
	// and unknown values included); RolesPresent tells an absent claim from [].
	Roles        []string
	RolesPresent bool

	Context            *Context
	ToolPlatform       *ToolPlatform
	LaunchPresentation *LaunchPresentation
	// Custom holds the custom claim: strings as sent, numbers and booleans as
	// their JSON text, objects/arrays as compact JSON, null dropped (Canvas quirks).
	Custom          map[string]string
	NRPS            *NRPSClaim
	AGS             *AGSClaim
	Groups          *GroupsClaim
	DeepLinking     *DeepLinkingSettings
	LIS             *LIS
	RoleScopeMentor []string
	ForUser         *ForUser
	// AssetProcessor holds the Asset Processor and EULA claims (claims_assetprocessor.go).
	AssetProcessor AssetProcessor
	// BasicOutcome and LTI1p1 are the LTI 1.1 legacy claims (legacy.go).
	BasicOutcome      *BasicOutcome
	LTI1p1            *LTI1p1
	LTI11LegacyUserID string

	// Raw is the payload exactly as received (for /api/idtoken?raw=true and for
	// claims this type does not model).
	Raw json.RawMessage

	bad claimBits // claims present with a JSON type that cannot be used
}

// claimBits flags claims (or required members) that were present with an
// unusable JSON type. Validate turns them into the error of the rule that
// checks the claim; ParseClaims reports those of required claims.
type claimBits uint32

const (
	badIss claimBits = 1 << iota
	badSub
	badAud
	badAzp
	badExp
	badIat
	badNonce
	badMessageType
	badVersion
	badDeploymentID
	badTargetLinkURI
	badResourceLink   // not an object
	badResourceLinkID // id not a string
	badRoles
	badContextID
	badDeepLinking // not an object
	badDLReturnURL
	badDLAcceptTypes
	badDLTargets
	badAGS         // endpoint claim not an object (required by a submission review)
	badAGSLineItem // endpoint.lineitem not a string
	badForUser     // for_user not an object
	badForUserID   // for_user.user_id not a string
)

// ParseClaims decodes an id_token payload. It fails only when payload is not a
// JSON object, or when a claim the message requires is present with a wrong JSON
// type (the *apierr.Error then names the claim and the rule; the partly decoded claims
// are returned with it). Absent claims are not an error here: Validate reports
// them. Raw is a copy of payload.
func ParseClaims(payload []byte) (*Claims, error) {
	c, ok := parseClaims(append(json.RawMessage(nil), payload...))
	if !ok {
		return nil, &apierr.Error{Status: 400, Code: CodeInvalidToken, Rule: "T-TOK-03",
			Description: "The id_token payload is not a JSON object."}
	}
	if e := c.typeError(); e != nil {
		return c, e
	}
	return c, nil
}

// ParseValidatedClaims is ParseClaims for claims this service validated earlier and got
// back through authenticated encryption (an ltik): the payload is known to be one JSON
// object, so it is neither copied nor checked for claims of the wrong type (the decode
// still validates the JSON as it goes). Never use it on input from outside.
func ParseValidatedClaims(payload []byte) (*Claims, error) {
	c, ok := parseClaims(payload)
	if !ok {
		return nil, &apierr.Error{Status: 400, Code: CodeInvalidToken, Rule: "T-TOK-03",
			Description: "The claims are not a JSON object."}
	}
	return c, nil
}

// parseClaims decodes payload, which it keeps as Raw, validating it in the same
// pass. ok is false when payload is not a JSON object.
func parseClaims(payload []byte) (*Claims, bool) {
	c := &Claims{Raw: payload}
	if !c.decode(string(payload)) {
		return nil, false
	}
	return c, true
}

// jsonObject validates payload and returns it as a string holding one object.
func jsonObject(payload []byte) (string, bool) {
	s := string(payload)
	if !jsonscan.Valid(s) {
		return "", false
	}
	s = trimJSON(s)
	return s, kindOf(s) == kindObject
}

func trimJSON(s string) string {
	return strings.Trim(s, " \t\n\r")
}

// decode decodes the claims in obj and reports whether obj is one valid JSON object
// (whitespace around it allowed); when it is not, c holds what came before the fault.
func (c *Claims) decode(obj string) bool {
	for it := newObjectIter(obj); ; {
		key, val, ok := it.next()
		if !ok {
			return it.valid()
		}
		f, known := claimFields[key]
		switch {
		case !known: // T-TOK-23
		case kindOf(val) == kindNull: // null counts as absent
			f.reset(c)
			c.bad &^= f.bad
		default:
			f.decode(c, val)
		}
	}
}

// claimField is how one top-level claim is read into Claims.
type claimField struct {
	decode func(c *Claims, val string) // val is not null; sets or clears the bits in bad
	reset  func(c *Claims)             // back to absent (the claim is null)
	bad    claimBits                   // the bits decode may set, cleared with reset
}

// claimFields are the claims Claims models, by name: adding a claim is one entry here.
var claimFields = map[string]claimField{
	"iss":   requiredString(func(c *Claims) *string { return &c.Issuer }, badIss),
	"sub":   requiredString(func(c *Claims) *string { return &c.Subject }, badSub),
	"azp":   requiredString(func(c *Claims) *string { return &c.AuthorizedParty }, badAzp),
	"nonce": requiredString(func(c *Claims) *string { return &c.Nonce }, badNonce),
	"aud": {bad: badAud,
		decode: func(c *Claims, val string) {
			aud, ok := decodeAudience(val)
			c.Audience = aud
			c.flag(badAud, !ok)
		},
		reset: func(c *Claims) { c.Audience = nil }},
	"exp": {bad: badExp,
		decode: func(c *Claims, val string) {
			c.ExpiresAt, c.HasExp = asNumericDate(val)
			c.flag(badExp, !c.HasExp)
		},
		reset: func(c *Claims) { c.ExpiresAt, c.HasExp = 0, false }},
	"iat": {bad: badIat,
		decode: func(c *Claims, val string) {
			c.IssuedAt, c.HasIat = asNumericDate(val)
			c.flag(badIat, !c.HasIat)
		},
		reset: func(c *Claims) { c.IssuedAt, c.HasIat = 0, false }},

	"name":        optional(func(c *Claims) *string { return &c.Name }, optString),
	"given_name":  optional(func(c *Claims) *string { return &c.GivenName }, optString),
	"family_name": optional(func(c *Claims) *string { return &c.FamilyName }, optString),
	"middle_name": optional(func(c *Claims) *string { return &c.MiddleName }, optString),
	"email":       optional(func(c *Claims) *string { return &c.Email }, optString),
	"picture":     optional(func(c *Claims) *string { return &c.Picture }, optString),
	"locale":      optional(func(c *Claims) *string { return &c.Locale }, optString),

	ClaimMessageType:   requiredString(func(c *Claims) *string { return &c.MessageType }, badMessageType),
	ClaimVersion:       requiredString(func(c *Claims) *string { return &c.Version }, badVersion),
	ClaimDeploymentID:  requiredString(func(c *Claims) *string { return &c.DeploymentID }, badDeploymentID),
	ClaimTargetLinkURI: requiredString(func(c *Claims) *string { return &c.TargetLinkURI }, badTargetLinkURI),
	ClaimResourceLink: {bad: badResourceLink | badResourceLinkID,
		decode: (*Claims).decodeResourceLink,
		reset:  func(c *Claims) { c.ResourceLink = nil }},
	ClaimRoles: {bad: badRoles,
		decode: func(c *Claims, val string) {
			c.Roles, c.RolesPresent = nil, false
			c.flag(badRoles, kindOf(val) != kindArray)
			if kindOf(val) == kindArray {
				c.Roles, c.RolesPresent = stringList(val, false)
			}
		},
		reset: func(c *Claims) { c.Roles, c.RolesPresent = nil, false }},
	ClaimContext: {bad: badContextID,
		decode: (*Claims).decodeContext,
		reset:  func(c *Claims) { c.Context = nil }},
	ClaimDeepLinkingSettings: {bad: badDeepLinking | badDLReturnURL | badDLAcceptTypes | badDLTargets,
		decode: (*Claims).decodeDeepLinking,
		reset:  func(c *Claims) { c.DeepLinking = nil }},

	ClaimToolPlatform:       optional(func(c *Claims) **ToolPlatform { return &c.ToolPlatform }, decodeToolPlatform),
	ClaimLaunchPresentation: optional(func(c *Claims) **LaunchPresentation { return &c.LaunchPresentation }, decodeLaunchPresentation),
	ClaimCustom:             optional(func(c *Claims) *map[string]string { return &c.Custom }, decodeCustom),
	ClaimLIS:                optional(func(c *Claims) **LIS { return &c.LIS }, decodeLIS),
	ClaimGroups:             optional(func(c *Claims) **GroupsClaim { return &c.Groups }, decodeGroups),
	ClaimRoleScopeMentor: optional(func(c *Claims) *[]string { return &c.RoleScopeMentor }, func(val string) []string {
		list, _ := stringList(val, false)
		return list
	}),
	ClaimNRPS: optional(func(c *Claims) **NRPSClaim { return &c.NRPS }, decodeNRPS),
	ClaimAGS: {bad: badAGS | badAGSLineItem,
		decode: (*Claims).decodeAGSClaim,
		reset:  func(c *Claims) { c.AGS = nil }},
	ClaimForUser: {bad: badForUser | badForUserID,
		decode: (*Claims).decodeForUserClaim,
		reset:  func(c *Claims) { c.ForUser = nil }},
}

// requiredString is a string claim a message may require: another JSON type sets bit.
func requiredString(at func(*Claims) *string, bit claimBits) claimField {
	return claimField{bad: bit,
		decode: func(c *Claims, val string) { *at(c) = c.requiredString(val, bit) },
		reset:  func(c *Claims) { *at(c) = "" }}
}

// optional is a claim no message requires: dec tolerates any JSON type (T-QUIRK-04).
func optional[T any](at func(*Claims) *T, dec func(val string) T) claimField {
	return claimField{
		decode: func(c *Claims, val string) { *at(c) = dec(val) },
		reset:  func(c *Claims) { var zero T; *at(c) = zero }}
}

func (c *Claims) flag(bit claimBits, set bool) {
	if set {
		c.bad |= bit
	} else {
		c.bad &^= bit
	}
}

func (c *Claims) requiredString(val string, bit claimBits) string {
	s, ok := asString(val)
	c.flag(bit, !ok)
	return s
}

func (c *Claims) decodeResourceLink(val string) {
	c.ResourceLink = nil
	c.bad &^= badResourceLink | badResourceLinkID
	rl := &ResourceLink{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "id":
			id, isStr := asString(v)
			rl.ID = id
			c.flag(badResourceLinkID, !isStr && kindOf(v) != kindNull)
		case "title":
			rl.Title = optString(v)
		case "description":
			rl.Description = optString(v)
		}
	}) {
		c.bad |= badResourceLink
		return
	}
	c.ResourceLink = rl
}

func (c *Claims) decodeContext(val string) {
	c.Context = nil
	c.bad &^= badContextID
	ctx := &Context{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "id":
			id, isStr := asString(v)
			ctx.ID = id
			c.flag(badContextID, !isStr && kindOf(v) != kindNull)
		case "label":
			ctx.Label = optString(v)
		case "title":
			ctx.Title = optString(v)
		case "type":
			ctx.Type, _ = stringList(v, false)
		}
	}) {
		return // optional claim: tolerated as absent
	}
	c.Context = ctx
}

func (c *Claims) decodeDeepLinking(val string) {
	c.DeepLinking = nil
	c.bad &^= badDeepLinking | badDLReturnURL | badDLAcceptTypes | badDLTargets
	dl := &DeepLinkingSettings{}
	if !eachMember(val, func(k, v string) {
		null := kindOf(v) == kindNull
		switch k {
		case "deep_link_return_url":
			s, isStr := asString(v)
			dl.DeepLinkReturnURL = s
			c.flag(badDLReturnURL, !isStr && !null)
		case "accept_types":
			list, isList := stringList(v, true)
			dl.AcceptTypes = list
			c.flag(badDLAcceptTypes, !isList && !null)
		case "accept_presentation_document_targets":
			list, isList := stringList(v, true)
			dl.AcceptPresentationDocumentTargets = list
			c.flag(badDLTargets, !isList && !null)
		case "accept_media_types":
			dl.AcceptMediaTypes, _ = stringList(v, true)
		case "accept_multiple":
			dl.AcceptMultiple = optBool(v)
		case "accept_lineitem":
			dl.AcceptLineItem = optBool(v)
		case "auto_create":
			dl.AutoCreate = optBool(v)
		case "title":
			dl.Title = optString(v)
		case "text":
			dl.Text = optString(v)
		case "data":
			dl.Data, dl.DataPresent = asString(v)
		}
	}) {
		c.bad |= badDeepLinking
		return
	}
	c.DeepLinking = dl
}

func optBool(raw string) *bool {
	if b, ok := asBool(raw); ok {
		return &b
	}
	return nil
}

func decodeToolPlatform(val string) *ToolPlatform {
	tp := &ToolPlatform{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "guid":
			tp.GUID = optString(v)
		case "name":
			tp.Name = optString(v)
		case "contact_email":
			tp.ContactEmail = optString(v)
		case "description":
			tp.Description = optString(v)
		case "url":
			tp.URL = optString(v)
		case "product_family_code":
			tp.ProductFamilyCode = optString(v)
		case "version":
			tp.Version = optString(v)
		}
	}) {
		return nil
	}
	return tp
}

func decodeLaunchPresentation(val string) *LaunchPresentation {
	lp := &LaunchPresentation{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "document_target":
			lp.DocumentTarget = optString(v)
		case "return_url":
			lp.ReturnURL = optString(v)
		case "locale":
			lp.Locale = optString(v)
		case "width":
			lp.Width, _ = asInt(v)
		case "height":
			lp.Height, _ = asInt(v)
		}
	}) {
		return nil
	}
	return lp
}

func decodeCustom(val string) map[string]string {
	m := make(map[string]string, 8)
	if !eachMember(val, func(k, v string) {
		if s, keep := stringify(v); keep {
			m[k] = s
		} else {
			delete(m, k) // null: dropped (a later null overrides an earlier value)
		}
	}) {
		return nil
	}
	return m
}

func decodeLIS(val string) *LIS {
	l := &LIS{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "person_sourcedid":
			l.PersonSourcedID = optString(v)
		case "course_offering_sourcedid":
			l.CourseOfferingSourcedID = optString(v)
		case "course_section_sourcedid":
			l.CourseSectionSourcedID = optString(v)
		}
	}) {
		return nil
	}
	return l
}

func decodeNRPS(val string) *NRPSClaim {
	n := &NRPSClaim{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "context_memberships_url":
			n.ContextMembershipsURL = optString(v)
		case "service_versions":
			n.ServiceVersions, _ = stringList(v, true)
		}
	}) {
		return nil
	}
	return n
}

func decodeAGS(val string) *AGSClaim {
	a := &AGSClaim{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "scope":
			if kindOf(v) == kindString {
				a.Scope = splitSpaces(decodeString(v))
			} else {
				a.Scope, _ = stringList(v, false)
			}
		case "lineitems":
			a.LineItems = optString(v)
		case "lineitem":
			a.LineItem = optString(v)
		}
	}) {
		return nil
	}
	return a
}

func decodeForUser(val string) *ForUser {
	f := &ForUser{}
	if !eachMember(val, func(k, v string) {
		switch k {
		case "user_id":
			f.UserID = optString(v)
		case "person_sourcedid":
			f.PersonSourcedID = optString(v)
		case "name":
			f.Name = optString(v)
		case "given_name":
			f.GivenName = optString(v)
		case "family_name":
			f.FamilyName = optString(v)
		case "email":
			f.Email = optString(v)
		case "roles":
			f.Roles, _ = stringList(v, false)
		}
	}) {
		return nil
	}
	return f
}

func splitSpaces(s string) []string {
	out := make([]string, 0, 4)
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return out
}

// typeError reports the first claim, required for this message, that is present
// with a wrong JSON type, as the error Validate gives for it.
func (c *Claims) typeError() *apierr.Error {
	if c.bad == 0 {
		return nil
	}
	always := []claimBits{badIss, badAud, badExp, badIat, badNonce, badVersion, badMessageType,
		badDeploymentID, badSub, badContextID}
	for _, b := range always {
		if c.bad&b != 0 {
			return c.errorFor(b)
		}
	}
	var byType []claimBits
	switch c.MessageType {
	case MessageResourceLink:
		byType = []claimBits{badTargetLinkURI, badResourceLink, badResourceLinkID, badRoles}
	case MessageDeepLinking:
		byType = []claimBits{badDeepLinking, badDLReturnURL, badDLAcceptTypes, badDLTargets, badTargetLinkURI}
	case MessageSubmissionReview:
		byType = submissionReviewBits
	}
	for _, b := range byType {
		if c.bad&b != 0 {
			return c.errorFor(b)
		}
	}
	if IsAssetProcessorMessage(c.MessageType) {
		return c.AssetProcessor.typeError()
	}
	return nil
}

// errorFor is the error Validate gives for a claim with a wrong JSON type.
func (c *Claims) errorFor(b claimBits) *apierr.Error {
	switch b {
	case badIss:
		return errIssuer("The iss claim is not a string.")
	case badAud:
		return errAudience("The aud claim is not a string or an array of strings.")
	case badAzp:
		return errAzp("The azp claim is not a string.")
	case badExp:
		return errExpired("The exp claim is not a number.")
	case badIat:
		return errIat("The iat claim is not a number.")
	case badNonce:
		return newError(401, CodeMissingNonce, "T-NONCE-01", "The nonce claim is not a string.")
	case badVersion:
		return newError(400, CodeInvalidLTIVersion, "T-TOK-17", "The LTI version claim is not a string.")
	case badMessageType:
		return newError(400, CodeInvalidMessageType, "T-TOK-18", "The message_type claim is not a string.")
	case badDeploymentID:
		return newError(400, CodeMissingDeploymentID, "T-TOK-19", "The deployment_id claim is not a string.")
	case badSub:
		return errInvalidClaim("sub", "a string")
	case badContextID:
		return errInvalidClaim("context.id", "a string")
	case badTargetLinkURI:
		return errInvalidClaim("target_link_uri", "a string")
	case badResourceLink:
		return errInvalidClaim("resource_link", "an object")
	case badResourceLinkID:
		return errInvalidClaim("resource_link.id", "a string")
	case badRoles:
		return errInvalidClaim("roles", "an array")
	case badDeepLinking:
		return errInvalidClaim("deep_linking_settings", "an object")
	case badDLReturnURL:
		return errInvalidClaim("deep_linking_settings.deep_link_return_url", "a string")
	case badDLAcceptTypes:
		return errInvalidClaim("deep_linking_settings.accept_types", "an array of strings")
	case badDLTargets:
		return errInvalidClaim("deep_linking_settings.accept_presentation_document_targets", "an array of strings")
	}
	if e := submissionReviewTypeError(b); e != nil {
		return e
	}
	return newError(400, CodeInvalidToken, "T-TOK-03", "The id_token payload has a claim of the wrong type.")
}
