package lti

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
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
	sc := newScanner(string(b))
	aud, ok := readAudience(sc)
	if sc.End() != nil {
		return errors.New("lti: aud is not valid JSON")
	}
	if !ok {
		return errors.New("lti: aud must be a string or an array of strings")
	}
	*a = aud
	return nil
}

// readAudience reads aud: a string, null, or an array of strings.
func readAudience(sc *scanner) (Audience, bool) {
	switch sc.Kind() {
	case kindString:
		return Audience{sc.Str()}, true
	case kindNull:
		sc.Skip()
		return nil, true
	case kindArray:
		start, ok := sc.listStart(), true
		for sc.Array(); sc.NextElement(); {
			s, isStr := readString(sc)
			sc.strs, ok = append(sc.strs, s), ok && isStr
		}
		if !ok {
			return nil, false
		}
		return sc.list(start), true
	}
	sc.Skip()
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
	// claims this type does not model). The string fields share its memory: never
	// modify it (append to a copy).
	Raw json.RawMessage

	bad claimBits // claims present with a JSON type that cannot be used
	mem claimMem  // where the decode puts the claims most launches carry
}

// claimMem holds the structs of the claims most launches carry, allocated with the
// Claims instead of one by one; a claim sent twice reuses its slot (the last one wins).
type claimMem struct {
	rl   ResourceLink
	ctx  Context
	tp   ToolPlatform
	lp   LaunchPresentation
	nrps NRPSClaim
	ags  AGSClaim
	lis  LIS
	l1p1 LTI1p1
}

// clearUnused zeroes the slots of claims that ended up absent (null, or not an object,
// after an object), so that two Claims holding the same claims are equal structs.
func (m *claimMem) clearUnused(c *Claims) {
	clearIf(&m.rl, c.ResourceLink == nil)
	clearIf(&m.ctx, c.Context == nil)
	clearIf(&m.tp, c.ToolPlatform == nil)
	clearIf(&m.lp, c.LaunchPresentation == nil)
	clearIf(&m.nrps, c.NRPS == nil)
	clearIf(&m.ags, c.AGS == nil)
	clearIf(&m.lis, c.LIS == nil)
	clearIf(&m.l1p1, c.LTI1p1 == nil)
}

func clearIf[T any](p *T, absent bool) {
	if absent {
		var zero T
		*p = zero
	}
}

// slot returns the zeroed slot of claimMem that at picks, or a new T when sc decodes
// for no Claims.
func slot[T any](sc *scanner, at func(m *claimMem) *T) *T {
	if sc.mem == nil {
		return new(T)
	}
	p := at(sc.mem)
	var zero T
	*p = zero
	return p
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
// still validates the JSON as it goes). The claims keep payload as Raw and their strings
// share its memory: the caller hands it over and must not modify it afterwards. Never
// use it on input from outside.
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
	if !c.decode(sharedString(payload)) {
		return nil, false
	}
	return c, true
}

func trimJSON(s string) string {
	return strings.Trim(s, " \t\n\r")
}

// decode decodes the claims in doc, in one pass that also validates it, and reports
// whether doc is one valid JSON object (whitespace around it allowed); when it is not,
// c holds what came before the fault.
func (c *Claims) decode(doc string) bool {
	sc := newScanner(doc)
	sc.mem = &c.mem
	if sc.Kind() != kindObject {
		return false
	}
	for sc.Object(); sc.NextMember(); {
		f, known := claimFields[sc.Key()]
		switch {
		case !known: // T-TOK-23: skipped (and validated) by NextMember
		case sc.Kind() == kindNull: // null counts as absent
			sc.Skip()
			f.reset(c)
			c.bad &^= f.bad
		default:
			f.decode(c, sc)
		}
	}
	c.mem.clearUnused(c)
	return sc.End() == nil
}

// claimField is how one top-level claim is read into Claims.
type claimField struct {
	decode func(c *Claims, sc *scanner) // reads the value (not null); sets or clears the bits in bad
	reset  func(c *Claims)              // back to absent (the claim is null)
	bad    claimBits                    // the bits decode may set, cleared with reset
}

// claimFields are the claims Claims models, by name: adding a claim is one entry here.
var claimFields = map[string]claimField{
	"iss":   requiredString(func(c *Claims) *string { return &c.Issuer }, badIss),
	"sub":   requiredString(func(c *Claims) *string { return &c.Subject }, badSub),
	"azp":   requiredString(func(c *Claims) *string { return &c.AuthorizedParty }, badAzp),
	"nonce": requiredString(func(c *Claims) *string { return &c.Nonce }, badNonce),
	"aud": {bad: badAud,
		decode: func(c *Claims, sc *scanner) {
			aud, ok := readAudience(sc)
			c.Audience = aud
			c.flag(badAud, !ok)
		},
		reset: func(c *Claims) { c.Audience = nil }},
	"exp": {bad: badExp,
		decode: func(c *Claims, sc *scanner) {
			c.ExpiresAt, c.HasExp = readNumericDate(sc)
			c.flag(badExp, !c.HasExp)
		},
		reset: func(c *Claims) { c.ExpiresAt, c.HasExp = 0, false }},
	"iat": {bad: badIat,
		decode: func(c *Claims, sc *scanner) {
			c.IssuedAt, c.HasIat = readNumericDate(sc)
			c.flag(badIat, !c.HasIat)
		},
		reset: func(c *Claims) { c.IssuedAt, c.HasIat = 0, false }},

	"name":        optional(func(c *Claims) *string { return &c.Name }, readOptString),
	"given_name":  optional(func(c *Claims) *string { return &c.GivenName }, readOptString),
	"family_name": optional(func(c *Claims) *string { return &c.FamilyName }, readOptString),
	"middle_name": optional(func(c *Claims) *string { return &c.MiddleName }, readOptString),
	"email":       optional(func(c *Claims) *string { return &c.Email }, readOptString),
	"picture":     optional(func(c *Claims) *string { return &c.Picture }, readOptString),
	"locale":      optional(func(c *Claims) *string { return &c.Locale }, readOptString),

	ClaimMessageType:   requiredString(func(c *Claims) *string { return &c.MessageType }, badMessageType),
	ClaimVersion:       requiredString(func(c *Claims) *string { return &c.Version }, badVersion),
	ClaimDeploymentID:  requiredString(func(c *Claims) *string { return &c.DeploymentID }, badDeploymentID),
	ClaimTargetLinkURI: requiredString(func(c *Claims) *string { return &c.TargetLinkURI }, badTargetLinkURI),
	ClaimResourceLink: {bad: badResourceLink | badResourceLinkID,
		decode: (*Claims).decodeResourceLink,
		reset:  func(c *Claims) { c.ResourceLink = nil }},
	ClaimRoles: {bad: badRoles,
		decode: func(c *Claims, sc *scanner) {
			c.Roles, c.RolesPresent = nil, false
			c.flag(badRoles, sc.Kind() != kindArray)
			if sc.Kind() == kindArray {
				c.Roles, c.RolesPresent = readStringList(sc, false)
			} else {
				sc.Skip()
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
	ClaimRoleScopeMentor: optional(func(c *Claims) *[]string { return &c.RoleScopeMentor }, func(sc *scanner) []string {
		list, _ := readStringList(sc, false)
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
		decode: func(c *Claims, sc *scanner) {
			s, ok := readString(sc)
			*at(c) = s
			c.flag(bit, !ok)
		},
		reset: func(c *Claims) { *at(c) = "" }}
}

// optional is a claim no message requires: dec tolerates any JSON type (T-QUIRK-04).
func optional[T any](at func(*Claims) *T, dec func(sc *scanner) T) claimField {
	return claimField{
		decode: func(c *Claims, sc *scanner) { *at(c) = dec(sc) },
		reset:  func(c *Claims) { var zero T; *at(c) = zero }}
}

func (c *Claims) flag(bit claimBits, set bool) {
	if set {
		c.bad |= bit
	} else {
		c.bad &^= bit
	}
}

func (c *Claims) decodeResourceLink(sc *scanner) {
	c.ResourceLink = nil
	c.bad &^= badResourceLink | badResourceLinkID
	if !enterObject(sc) {
		c.bad |= badResourceLink
		return
	}
	rl := slot(sc, func(m *claimMem) *ResourceLink { return &m.rl })
	for sc.NextMember() {
		switch sc.Key() {
		case "id":
			id, bad := readRequiredMember(sc)
			rl.ID = id
			c.flag(badResourceLinkID, bad)
		case "title":
			rl.Title = readOptString(sc)
		case "description":
			rl.Description = readOptString(sc)
		}
	}
	c.ResourceLink = rl
}

func (c *Claims) decodeContext(sc *scanner) {
	c.Context = nil
	c.bad &^= badContextID
	if !enterObject(sc) {
		return // optional claim: tolerated as absent
	}
	ctx := slot(sc, func(m *claimMem) *Context { return &m.ctx })
	for sc.NextMember() {
		switch sc.Key() {
		case "id":
			id, bad := readRequiredMember(sc)
			ctx.ID = id
			c.flag(badContextID, bad)
		case "label":
			ctx.Label = readOptString(sc)
		case "title":
			ctx.Title = readOptString(sc)
		case "type":
			ctx.Type, _ = readStringList(sc, false)
		}
	}
	c.Context = ctx
}

func (c *Claims) decodeDeepLinking(sc *scanner) {
	c.DeepLinking = nil
	c.bad &^= badDeepLinking | badDLReturnURL | badDLAcceptTypes | badDLTargets
	if !enterObject(sc) {
		c.bad |= badDeepLinking
		return
	}
	dl := &DeepLinkingSettings{}
	for sc.NextMember() {
		null := sc.Kind() == kindNull
		switch sc.Key() {
		case "deep_link_return_url":
			s, bad := readRequiredMember(sc)
			dl.DeepLinkReturnURL = s
			c.flag(badDLReturnURL, bad)
		case "accept_types":
			list, isList := readStringList(sc, true)
			dl.AcceptTypes = list
			c.flag(badDLAcceptTypes, !isList && !null)
		case "accept_presentation_document_targets":
			list, isList := readStringList(sc, true)
			dl.AcceptPresentationDocumentTargets = list
			c.flag(badDLTargets, !isList && !null)
		case "accept_media_types":
			dl.AcceptMediaTypes, _ = readStringList(sc, true)
		case "accept_multiple":
			dl.AcceptMultiple = readOptBool(sc)
		case "accept_lineitem":
			dl.AcceptLineItem = readOptBool(sc)
		case "auto_create":
			dl.AutoCreate = readOptBool(sc)
		case "title":
			dl.Title = readOptString(sc)
		case "text":
			dl.Text = readOptString(sc)
		case "data":
			dl.Data, dl.DataPresent = readString(sc)
		}
	}
	c.DeepLinking = dl
}

func decodeToolPlatform(sc *scanner) *ToolPlatform {
	if !enterObject(sc) {
		return nil
	}
	tp := slot(sc, func(m *claimMem) *ToolPlatform { return &m.tp })
	for sc.NextMember() {
		switch sc.Key() {
		case "guid":
			tp.GUID = readOptString(sc)
		case "name":
			tp.Name = readOptString(sc)
		case "contact_email":
			tp.ContactEmail = readOptString(sc)
		case "description":
			tp.Description = readOptString(sc)
		case "url":
			tp.URL = readOptString(sc)
		case "product_family_code":
			tp.ProductFamilyCode = readOptString(sc)
		case "version":
			tp.Version = readOptString(sc)
		}
	}
	return tp
}

func decodeLaunchPresentation(sc *scanner) *LaunchPresentation {
	if !enterObject(sc) {
		return nil
	}
	lp := slot(sc, func(m *claimMem) *LaunchPresentation { return &m.lp })
	for sc.NextMember() {
		switch sc.Key() {
		case "document_target":
			lp.DocumentTarget = readOptString(sc)
		case "return_url":
			lp.ReturnURL = readOptString(sc)
		case "locale":
			lp.Locale = readOptString(sc)
		case "width":
			lp.Width, _ = readInt(sc)
		case "height":
			lp.Height, _ = readInt(sc)
		}
	}
	return lp
}

func decodeCustom(sc *scanner) map[string]string {
	if !enterObject(sc) {
		return nil
	}
	m := make(map[string]string, 8)
	for sc.NextMember() {
		k := sc.Key()
		if s, keep := readStringify(sc); keep {
			m[k] = s
		} else {
			delete(m, k) // null: dropped (a later null overrides an earlier value)
		}
	}
	return m
}

func decodeLIS(sc *scanner) *LIS {
	if !enterObject(sc) {
		return nil
	}
	l := slot(sc, func(m *claimMem) *LIS { return &m.lis })
	for sc.NextMember() {
		switch sc.Key() {
		case "person_sourcedid":
			l.PersonSourcedID = readOptString(sc)
		case "course_offering_sourcedid":
			l.CourseOfferingSourcedID = readOptString(sc)
		case "course_section_sourcedid":
			l.CourseSectionSourcedID = readOptString(sc)
		}
	}
	return l
}

func decodeNRPS(sc *scanner) *NRPSClaim {
	if !enterObject(sc) {
		return nil
	}
	n := slot(sc, func(m *claimMem) *NRPSClaim { return &m.nrps })
	for sc.NextMember() {
		switch sc.Key() {
		case "context_memberships_url":
			n.ContextMembershipsURL = readOptString(sc)
		case "service_versions":
			n.ServiceVersions, _ = readStringList(sc, true)
		}
	}
	return n
}

func decodeForUser(sc *scanner, c *Claims) *ForUser {
	if !enterObject(sc) {
		return nil
	}
	f := &ForUser{}
	for sc.NextMember() {
		switch sc.Key() {
		case "user_id":
			id, bad := readRequiredMember(sc)
			f.UserID = id
			c.flag(badForUserID, bad)
		case "person_sourcedid":
			f.PersonSourcedID = readOptString(sc)
		case "name":
			f.Name = readOptString(sc)
		case "given_name":
			f.GivenName = readOptString(sc)
		case "family_name":
			f.FamilyName = readOptString(sc)
		case "email":
			f.Email = readOptString(sc)
		case "roles":
			f.Roles, _ = readStringList(sc, false)
		}
	}
	return f
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
