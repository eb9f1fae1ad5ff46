package ltiplatform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"time"

	"github.com/ltiop/ltiop/api/ltiwire"
	"github.com/ltiop/ltiop/internal/urls"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// CodeInvalidLaunchData is the code of launch data that cannot make a valid id_token; the
// description names the field (service-interface §2.1, §2.2, §8).
const CodeInvalidLaunchData = "INVALID_PARAMETERS"

// LaunchData is what the integrator answers a payload with: who launches, from where,
// and which of its services the tool may use.
type LaunchData struct {
	Payload      string            `json:"payload"`
	User         *User             `json:"user"`
	Context      *Context          `json:"context,omitempty"`
	ResourceLink *ResourceLink     `json:"resourceLink,omitempty"`
	Custom       map[string]string `json:"custom,omitempty"`
	Presentation *Presentation     `json:"presentation,omitempty"`
	Platform     *PlatformInfo     `json:"platform,omitempty"`
	Services     *Services         `json:"services,omitempty"`
	DeepLinking  *DeepLinking      `json:"deepLinking,omitempty"`
	// ForUser is the learner whose submission a submission review shows (for_user claim).
	ForUser *ForUser `json:"forUser,omitempty"`
}

// ForUser is the for_user claim of a submission review: the learner, not the viewer.
type ForUser struct {
	ID              string   `json:"id"`
	PersonSourcedID string   `json:"personSourcedId,omitempty"`
	Name            string   `json:"name,omitempty"`
	GivenName       string   `json:"givenName,omitempty"`
	FamilyName      string   `json:"familyName,omitempty"`
	Email           string   `json:"email,omitempty"`
	Roles           []string `json:"roles,omitempty"`
}

// User is the launching user. ID defaults to the login_hint the launch was created with.
type User struct {
	ID         string   `json:"id,omitempty"`
	Roles      []string `json:"roles"`
	Name       string   `json:"name,omitempty"`
	GivenName  string   `json:"givenName,omitempty"`
	FamilyName string   `json:"familyName,omitempty"`
	MiddleName string   `json:"middleName,omitempty"`
	Email      string   `json:"email,omitempty"`
	Picture    string   `json:"picture,omitempty"`
	Locale     string   `json:"locale,omitempty"`
	// Username is only for the $User.username substitution variable: LTI 1.3 has no claim
	// for it.
	Username string `json:"username,omitempty"`
}

// Context is the course or group the launch comes from.
type Context struct {
	ID    string   `json:"id"`
	Label string   `json:"label,omitempty"`
	Title string   `json:"title,omitempty"`
	Type  []string `json:"type,omitempty"`
}

// Presentation is the launch_presentation claim.
type Presentation struct {
	DocumentTarget string `json:"documentTarget,omitempty"`
	ReturnURL      string `json:"returnUrl,omitempty"`
	Locale         string `json:"locale,omitempty"`
	Width          int    `json:"width,omitempty"`
	Height         int    `json:"height,omitempty"`
}

// PlatformInfo is the tool_platform claim.
type PlatformInfo struct {
	GUID              string `json:"guid"`
	Name              string `json:"name,omitempty"`
	ContactEmail      string `json:"contactEmail,omitempty"`
	Description       string `json:"description,omitempty"`
	URL               string `json:"url,omitempty"`
	ProductFamilyCode string `json:"productFamilyCode,omitempty"`
	Version           string `json:"version,omitempty"`
}

// Services are the integrator's own NRPS and AGS endpoints for this launch.
type Services struct {
	NamesAndRoles       *NamesAndRoles       `json:"namesAndRoles,omitempty"`
	AssignmentAndGrades *AssignmentAndGrades `json:"assignmentAndGrades,omitempty"`
}

// NamesAndRoles is the NRPS endpoint of the context: the integrator's own
// (contextMembershipsUrl), or, given as the JSON value true, ltiop's (Served).
type NamesAndRoles struct {
	ContextMembershipsURL string `json:"contextMembershipsUrl"`
	// Served says ltiop serves the context's memberships from the platform data API.
	Served bool `json:"-"`
	off    bool // given as false: no claim
}

// UnmarshalJSON reads true (ltiop serves it) or {"contextMembershipsUrl": ...}.
func (n *NamesAndRoles) UnmarshalJSON(b []byte) error {
	if served, ok := jsonTrue(b); ok {
		*n = NamesAndRoles{Served: served, off: !served}
		return nil
	}
	type plain NamesAndRoles
	return strictDecode(b, (*plain)(n))
}

// MarshalJSON writes what UnmarshalJSON reads back: true, false or the object.
func (n NamesAndRoles) MarshalJSON() ([]byte, error) {
	switch {
	case n.Served:
		return []byte("true"), nil
	case n.off:
		return []byte("false"), nil
	}
	type plain NamesAndRoles
	return json.Marshal(plain(n))
}

// AssignmentAndGrades is the AGS endpoint claim: the integrator's own URLs, or, without
// URLs (or given as the JSON value true), ltiop's, with lineItemId the integrator's id of
// the link's line item.
type AssignmentAndGrades struct {
	LineItemsURL string `json:"lineItemsUrl,omitempty"`
	LineItemURL  string `json:"lineItemUrl,omitempty"`
	LineItemID   string `json:"lineItemId,omitempty"`
	// LineItemOnly offers the tool lineItemId's line item alone: the claim has no
	// lineitems URL, and ltiop refuses the tool every other line item of the context.
	LineItemOnly bool     `json:"lineItemOnly,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	// Served says ltiop serves the line items from the platform data API.
	Served bool `json:"-"`
	off    bool // given as false: no claim
}

// UnmarshalJSON reads true or an object; an object without URLs is served by ltiop.
func (a *AssignmentAndGrades) UnmarshalJSON(b []byte) error {
	if served, ok := jsonTrue(b); ok {
		*a = AssignmentAndGrades{Served: served, off: !served}
		return nil
	}
	type plain AssignmentAndGrades
	if err := strictDecode(b, (*plain)(a)); err != nil {
		return err
	}
	a.Served = a.LineItemsURL == "" && a.LineItemURL == ""
	return nil
}

// MarshalJSON writes what UnmarshalJSON reads back: false, or the object (a served claim
// without URLs reads back as served).
func (a AssignmentAndGrades) MarshalJSON() ([]byte, error) {
	if a.off {
		return []byte("false"), nil
	}
	type plain AssignmentAndGrades
	return json.Marshal(plain(a))
}

// jsonTrue reports whether b is a JSON boolean, and which.
func jsonTrue(b []byte) (value, isBool bool) {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// strictDecode decodes an object refusing unknown members, as the API does.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// DeepLinking is the deep_linking_settings of a deep-linking launch (the return URL is
// ltiop's own).
type DeepLinking struct {
	AcceptTypes                       []string `json:"acceptTypes"`
	AcceptPresentationDocumentTargets []string `json:"acceptPresentationDocumentTargets"`
	AcceptMediaTypes                  string   `json:"acceptMediaTypes,omitempty"`
	AcceptMultiple                    *bool    `json:"acceptMultiple,omitempty"`
	AcceptLineItem                    *bool    `json:"acceptLineItem,omitempty"`
	AutoCreate                        *bool    `json:"autoCreate,omitempty"`
	Title                             string   `json:"title,omitempty"`
	Text                              string   `json:"text,omitempty"`
	Data                              string   `json:"data,omitempty"`
}

// MintParams are the inputs of an id_token besides the launch data.
type MintParams struct {
	Issuer   string
	Now      time.Time
	Lifetime time.Duration
	Launch   LaunchOf
	// AllowedScopes are the tool's scopes: service claims the tool could not use are left out.
	AllowedScopes []string
	// DeepLinkReturnURL is ltiop's return URL for this launch (deep-linking launches only).
	DeepLinkReturnURL string
	// AllowHTTP accepts http URLs in the launch data (dev mode).
	AllowHTTP bool
	// ToolCustom are the tool's own custom parameters (ToolRegistration spec.custom),
	// merged under the launch's.
	ToolCustom map[string]string
	// ServiceRoot seals the service grant of the launch (what it offers, in its context) and
	// returns the root URL of ltiop's NRPS and AGS services for it; nil when ltiop serves no platform data
	// (no platformDataUrl), and then served claims are refused.
	ServiceRoot func(ServiceOffer) (string, error)
}

// scopeAGS starts every AGS scope (ltiwire names the four ltiop serves).
const scopeAGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"

type idTokenClaims struct {
	Iss           string `json:"iss"`
	Aud           string `json:"aud"`
	Azp           string `json:"azp"`
	Sub           string `json:"sub"`
	Iat           int64  `json:"iat"`
	Exp           int64  `json:"exp"`
	Nonce         string `json:"nonce"`
	Name          string `json:"name,omitempty"`
	GivenName     string `json:"given_name,omitempty"`
	FamilyName    string `json:"family_name,omitempty"`
	MiddleName    string `json:"middle_name,omitempty"`
	Email         string `json:"email,omitempty"`
	Picture       string `json:"picture,omitempty"`
	Locale        string `json:"locale,omitempty"`
	DeploymentID  string `json:"https://purl.imsglobal.org/spec/lti/claim/deployment_id"`
	MessageType   string `json:"https://purl.imsglobal.org/spec/lti/claim/message_type"`
	Version       string `json:"https://purl.imsglobal.org/spec/lti/claim/version"`
	TargetLinkURI string `json:"https://purl.imsglobal.org/spec/lti/claim/target_link_uri"`

	Roles        []string          `json:"https://purl.imsglobal.org/spec/lti/claim/roles"`
	ResourceLink *ResourceLink     `json:"https://purl.imsglobal.org/spec/lti/claim/resource_link,omitempty"`
	Context      *Context          `json:"https://purl.imsglobal.org/spec/lti/claim/context,omitempty"`
	ToolPlatform *toolPlatform     `json:"https://purl.imsglobal.org/spec/lti/claim/tool_platform,omitempty"`
	Presentation *presentation     `json:"https://purl.imsglobal.org/spec/lti/claim/launch_presentation,omitempty"`
	Custom       map[string]string `json:"https://purl.imsglobal.org/spec/lti/claim/custom,omitempty"`
	NRPS         *nrpsClaim        `json:"https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice,omitempty"`
	AGS          *agsClaim         `json:"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint,omitempty"`
	DeepLinking  *dlSettings       `json:"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings,omitempty"`
	ForUser      *forUserClaim     `json:"https://purl.imsglobal.org/spec/lti/claim/for_user,omitempty"`
}

type forUserClaim struct {
	UserID          string   `json:"user_id"`
	PersonSourcedID string   `json:"person_sourcedid,omitempty"`
	Name            string   `json:"name,omitempty"`
	GivenName       string   `json:"given_name,omitempty"`
	FamilyName      string   `json:"family_name,omitempty"`
	Email           string   `json:"email,omitempty"`
	Roles           []string `json:"roles,omitempty"`
}

type toolPlatform struct {
	GUID              string `json:"guid"`
	Name              string `json:"name,omitempty"`
	ContactEmail      string `json:"contact_email,omitempty"`
	Description       string `json:"description,omitempty"`
	URL               string `json:"url,omitempty"`
	ProductFamilyCode string `json:"product_family_code,omitempty"`
	Version           string `json:"version,omitempty"`
}

type presentation struct {
	DocumentTarget string `json:"document_target,omitempty"`
	ReturnURL      string `json:"return_url,omitempty"`
	Locale         string `json:"locale,omitempty"`
	Width          int    `json:"width,omitempty"`
	Height         int    `json:"height,omitempty"`
}

type nrpsClaim struct {
	ContextMembershipsURL string   `json:"context_memberships_url"`
	ServiceVersions       []string `json:"service_versions"`
}

type agsClaim struct {
	Scope     []string `json:"scope"`
	LineItems string   `json:"lineitems,omitempty"`
	LineItem  string   `json:"lineitem,omitempty"`
}

type dlSettings struct {
	ReturnURL      string   `json:"deep_link_return_url"`
	AcceptTypes    []string `json:"accept_types"`
	AcceptTargets  []string `json:"accept_presentation_document_targets"`
	AcceptMedia    string   `json:"accept_media_types,omitempty"`
	AcceptMultiple *bool    `json:"accept_multiple,omitempty"`
	AcceptLineItem *bool    `json:"accept_lineitem,omitempty"`
	AutoCreate     *bool    `json:"auto_create,omitempty"`
	Title          string   `json:"title,omitempty"`
	Text           string   `json:"text,omitempty"`
	Data           string   `json:"data,omitempty"`
}

func fieldError(field, format string, args ...any) *apierr.Error {
	return &apierr.Error{Status: 400, Code: CodeInvalidLaunchData, Description: field + ": " + fmt.Sprintf(format, args...)}
}

// IDTokenClaims validates the launch data and returns the id_token payload (§1.7 minting
// rules): iss, aud and azp (the client), sub, iat, exp, the nonce unmodified (P-AUTH-11),
// deployment, message type, version, target link, roles, and the claims of the message type.
func IDTokenClaims(p MintParams, d *LaunchData) ([]byte, *apierr.Error) {
	l := &p.Launch
	c := idTokenClaims{
		Iss: p.Issuer, Aud: l.ClientID, Azp: l.ClientID, Iat: p.Now.Unix(), Exp: p.Now.Add(p.Lifetime).Unix(),
		Nonce: l.Nonce, DeploymentID: l.DeploymentID, MessageType: l.MessageType, Version: "1.3.0",
		TargetLinkURI: l.TargetLinkURI,
	}
	if e := CheckCustom("custom", d.Custom); e != nil {
		return nil, e
	}
	if e := p.user(&c, d.User, l.User); e != nil {
		return nil, e
	}
	if e := p.context(&c, d.Context); e != nil {
		return nil, e
	}
	switch l.MessageType {
	case MessageResourceLink:
		rl := d.ResourceLink
		if rl == nil {
			rl = l.ResourceLink
		}
		if rl == nil {
			return nil, fieldError("resourceLink.id", "a resource-link launch needs a resource link (give it when creating the launch or here)")
		}
		if !asciiID(rl.ID) {
			return nil, fieldError("resourceLink.id", "must be 1 to %d ASCII characters", MaxIdentifier)
		}
		c.ResourceLink = rl
		if d.DeepLinking != nil {
			return nil, fieldError("deepLinking", "only a deep-linking launch takes deep-linking settings")
		}
	case MessageDeepLinking:
		if e := p.deepLinking(&c, d.DeepLinking); e != nil {
			return nil, e
		}
	case MessageSubmissionReview:
		if e := p.submissionReview(&c, d, l); e != nil {
			return nil, e
		}
	}
	if d.ForUser != nil && l.MessageType != MessageSubmissionReview {
		return nil, fieldError("forUser", "only a submission review takes forUser")
	}
	if e := p.presentation(&c, d.Presentation); e != nil {
		return nil, e
	}
	if e := p.platform(&c, d.Platform); e != nil {
		return nil, e
	}
	if e := p.services(&c, d.Services); e != nil {
		return nil, e
	}
	if l.MessageType == MessageSubmissionReview && (c.AGS == nil || c.AGS.LineItem == "") { // T-SR-03
		return nil, fieldError("services.assignmentAndGrades.lineItemUrl",
			"a submission review needs the line item under review: lineItemUrl, or lineItemId with ltiop's services, and a tool holding an AGS scope")
	}
	c.Custom = MergeCustom(p.ToolCustom, d.Custom, &Variables{UserID: c.Sub, User: d.User, Context: c.Context, ResourceLink: c.ResourceLink})
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, &apierr.Error{Status: 500, Code: "INTERNAL_SERVER_ERROR", Description: "The id_token could not be encoded."}
	}
	return b, nil
}

func (p *MintParams) user(c *idTokenClaims, u *User, hintUser string) *apierr.Error {
	if u == nil {
		return fieldError("user", "required")
	}
	c.Sub = u.ID
	if c.Sub == "" {
		c.Sub = hintUser
	}
	if !asciiID(c.Sub) {
		return fieldError("user.id", "must be 1 to %d ASCII characters", MaxIdentifier)
	}
	if len(u.Roles) == 0 {
		return fieldError("user.roles", "at least one role is required")
	}
	for i, r := range u.Roles {
		if !lti.KnownRole(r) {
			return fieldError(fmt.Sprintf("user.roles[%d]", i), "%q is not a role of the LIS vocabulary (service-interface §2.1)", r)
		}
	}
	c.Roles = u.Roles
	for _, f := range [...]struct {
		name, value string
		dst         *string
	}{
		{"user.name", u.Name, &c.Name}, {"user.givenName", u.GivenName, &c.GivenName},
		{"user.familyName", u.FamilyName, &c.FamilyName}, {"user.middleName", u.MiddleName, &c.MiddleName},
		{"user.locale", u.Locale, &c.Locale}, {"user.username", u.Username, new(string)},
	} {
		if !validText(f.value, 1024) {
			return fieldError(f.name, "must be at most 1024 characters of text")
		}
		*f.dst = f.value
	}
	if u.Email != "" {
		if a, err := mail.ParseAddress(u.Email); err != nil || a.Address != u.Email {
			return fieldError("user.email", "is not an email address")
		}
		c.Email = u.Email
	}
	if u.Picture != "" {
		if !p.okURL(u.Picture) {
			return fieldError("user.picture", "must be an absolute https URL")
		}
		c.Picture = u.Picture
	}
	return nil
}

func (p *MintParams) context(c *idTokenClaims, ctx *Context) *apierr.Error {
	if ctx == nil {
		return nil
	}
	if !asciiID(ctx.ID) {
		return fieldError("context.id", "required, 1 to %d ASCII characters", MaxIdentifier)
	}
	for i, t := range ctx.Type {
		if len(lti.NormaliseContextTypes([]string{t})) == 0 {
			return fieldError(fmt.Sprintf("context.type[%d]", i), "%q is not a context type of service-interface §2.2", t)
		}
	}
	if !validText(ctx.Label, 1024) || !validText(ctx.Title, 1024) {
		return fieldError("context.title", "label and title must be at most 1024 characters of text")
	}
	c.Context = ctx
	return nil
}

func (p *MintParams) deepLinking(c *idTokenClaims, dl *DeepLinking) *apierr.Error {
	if dl == nil {
		return fieldError("deepLinking", "a deep-linking launch needs deep-linking settings")
	}
	if len(dl.AcceptTypes) == 0 {
		return fieldError("deepLinking.acceptTypes", "at least one content item type is required")
	}
	for i, t := range dl.AcceptTypes {
		if !slices.Contains(contentItemTypes, t) && !p.okURL(t) {
			return fieldError(fmt.Sprintf("deepLinking.acceptTypes[%d]", i), "%q is not a content item type (link, ltiResourceLink, file, html, image, or an extension URL)", t)
		}
	}
	if len(dl.AcceptPresentationDocumentTargets) == 0 {
		return fieldError("deepLinking.acceptPresentationDocumentTargets", "at least one document target is required")
	}
	for i, t := range dl.AcceptPresentationDocumentTargets {
		if t != "iframe" && t != "window" && t != "embed" {
			return fieldError(fmt.Sprintf("deepLinking.acceptPresentationDocumentTargets[%d]", i), "%q is not iframe, window or embed", t)
		}
	}
	if len(dl.Data) > MaxDataBytes {
		return fieldError("deepLinking.data", "must be at most %d bytes", MaxDataBytes)
	}
	c.DeepLinking = &dlSettings{
		ReturnURL: p.DeepLinkReturnURL, AcceptTypes: dl.AcceptTypes, AcceptTargets: dl.AcceptPresentationDocumentTargets,
		AcceptMedia: dl.AcceptMediaTypes, AcceptMultiple: dl.AcceptMultiple, AcceptLineItem: dl.AcceptLineItem,
		AutoCreate: dl.AutoCreate, Title: dl.Title, Text: dl.Text, Data: dl.Data,
	}
	return nil
}

// submissionReview sets the claims of an LtiSubmissionReviewRequest (AGS 2.0, conformance
// T-SR-02..05 on the tool side): for_user, the learner whose work is shown; the resource
// link when there is one; no deep-linking settings. The line item is checked with the
// services.
func (p *MintParams) submissionReview(c *idTokenClaims, d *LaunchData, l *LaunchOf) *apierr.Error {
	if d.DeepLinking != nil {
		return fieldError("deepLinking", "only a deep-linking launch takes deep-linking settings")
	}
	f := d.ForUser
	if f == nil || !asciiID(f.ID) {
		return fieldError("forUser.id", "required in a submission review: the learner whose submission it is, 1 to %d ASCII characters", MaxIdentifier)
	}
	for i, r := range f.Roles {
		if !lti.KnownRole(r) {
			return fieldError(fmt.Sprintf("forUser.roles[%d]", i), "%q is not a role of the LIS vocabulary (service-interface §2.1)", r)
		}
	}
	for _, t := range [...]struct{ name, v string }{{"forUser.personSourcedId", f.PersonSourcedID}, {"forUser.name", f.Name},
		{"forUser.givenName", f.GivenName}, {"forUser.familyName", f.FamilyName}} {
		if !validText(t.v, 1024) {
			return fieldError(t.name, "must be at most 1024 characters of text")
		}
	}
	if f.Email != "" {
		if a, err := mail.ParseAddress(f.Email); err != nil || a.Address != f.Email {
			return fieldError("forUser.email", "is not an email address")
		}
	}
	c.ForUser = &forUserClaim{UserID: f.ID, PersonSourcedID: f.PersonSourcedID, Name: f.Name, GivenName: f.GivenName,
		FamilyName: f.FamilyName, Email: f.Email, Roles: f.Roles}
	rl := d.ResourceLink
	if rl == nil {
		rl = l.ResourceLink
	}
	if rl != nil {
		if !asciiID(rl.ID) {
			return fieldError("resourceLink.id", "must be 1 to %d ASCII characters", MaxIdentifier)
		}
		c.ResourceLink = rl
	}
	return nil
}

var contentItemTypes = []string{"link", "ltiResourceLink", "file", "html", "image"}

func (p *MintParams) presentation(c *idTokenClaims, pr *Presentation) *apierr.Error {
	if pr == nil {
		return nil
	}
	switch pr.DocumentTarget {
	case "", "frame", "iframe", "window":
	default:
		return fieldError("presentation.documentTarget", "must be frame, iframe or window")
	}
	if pr.ReturnURL != "" && !p.okURL(pr.ReturnURL) {
		return fieldError("presentation.returnUrl", "must be an absolute https URL")
	}
	if pr.Width < 0 || pr.Height < 0 {
		return fieldError("presentation.width", "width and height must not be negative")
	}
	c.Presentation = &presentation{DocumentTarget: pr.DocumentTarget, ReturnURL: pr.ReturnURL, Locale: pr.Locale, Width: pr.Width, Height: pr.Height}
	return nil
}

func (p *MintParams) platform(c *idTokenClaims, pl *PlatformInfo) *apierr.Error {
	if pl == nil {
		return nil
	}
	if !asciiID(pl.GUID) {
		return fieldError("platform.guid", "required, 1 to %d ASCII characters", MaxIdentifier)
	}
	if pl.ContactEmail != "" {
		if a, err := mail.ParseAddress(pl.ContactEmail); err != nil || a.Address != pl.ContactEmail {
			return fieldError("platform.contactEmail", "is not an email address")
		}
	}
	if pl.URL != "" && !p.okURL(pl.URL) {
		return fieldError("platform.url", "must be an absolute https URL")
	}
	c.ToolPlatform = &toolPlatform{GUID: pl.GUID, Name: pl.Name, ContactEmail: pl.ContactEmail, Description: pl.Description,
		URL: pl.URL, ProductFamilyCode: pl.ProductFamilyCode, Version: pl.Version}
	return nil
}

// services adds the NRPS and AGS claims for the scopes the tool holds: a claim for a
// service the tool can get no token for would only mislead it. What the claims of ltiop's
// own services offer is sealed once into the launch's grant (ServiceOffer), so the tool can
// use no more of them than this launch offered, whatever its access token holds.
func (p *MintParams) services(c *idTokenClaims, s *Services) *apierr.Error {
	if s == nil {
		return nil
	}
	var offer ServiceOffer
	if n := s.NamesAndRoles; n != nil {
		allowed := slices.Contains(p.AllowedScopes, ltiwire.ScopeMembershipReadOnly)
		switch {
		case n.Served:
			if e := p.canServe(c, "services.namesAndRoles"); e != nil {
				return e
			}
			offer.NamesAndRoles = allowed
		case n.off:
		case !p.okURL(n.ContextMembershipsURL):
			return fieldError("services.namesAndRoles.contextMembershipsUrl", "must be an absolute https URL")
		case allowed:
			c.NRPS = &nrpsClaim{ContextMembershipsURL: n.ContextMembershipsURL, ServiceVersions: []string{"2.0"}}
		}
	}
	a := s.AssignmentAndGrades
	if a != nil && a.off {
		a = nil
	}
	var agsScopes []string
	if a != nil {
		if a.Served {
			if e := p.canServe(c, "services.assignmentAndGrades"); e != nil {
				return e
			}
			if !validText(a.LineItemID, MaxIdentifier) {
				return fieldError("services.assignmentAndGrades.lineItemId", "must be at most %d characters of text", MaxIdentifier)
			}
			if a.LineItemOnly && a.LineItemID == "" {
				return fieldError("services.assignmentAndGrades.lineItemOnly", "needs lineItemId: the one line item the tool may use")
			}
		} else {
			switch {
			case a.LineItemID != "":
				return fieldError("services.assignmentAndGrades.lineItemId", "is for line items ltiop serves: give it without lineItemsUrl and lineItemUrl")
			case a.LineItemOnly:
				return fieldError("services.assignmentAndGrades.lineItemOnly", "is for line items ltiop serves: with your own URLs, give lineItemUrl alone")
			case a.LineItemsURL != "" && !p.okURL(a.LineItemsURL):
				return fieldError("services.assignmentAndGrades.lineItemsUrl", "must be an absolute https URL")
			case a.LineItemURL != "" && !p.okURL(a.LineItemURL):
				return fieldError("services.assignmentAndGrades.lineItemUrl", "must be an absolute https URL")
			}
		}
		requested := a.Scopes
		if len(requested) == 0 {
			requested = []string{ltiwire.ScopeLineItem, ltiwire.ScopeLineItemReadOnly, ltiwire.ScopeResultReadOnly, ltiwire.ScopeScore}
		}
		for i, sc := range requested {
			if len(sc) <= len(scopeAGS) || sc[:len(scopeAGS)] != scopeAGS {
				return fieldError(fmt.Sprintf("services.assignmentAndGrades.scopes[%d]", i), "%q is not an AGS scope", sc)
			}
			if slices.Contains(p.AllowedScopes, sc) && !slices.Contains(agsScopes, sc) {
				agsScopes = append(agsScopes, sc)
			}
		}
		if a.Served { // the claim is made below, once the offer is sealed
			offer.AGSScopes = agsScopes
			if a.LineItemOnly {
				offer.LineItemID = a.LineItemID
			}
		} else if len(agsScopes) > 0 {
			c.AGS = &agsClaim{Scope: agsScopes, LineItems: a.LineItemsURL, LineItem: a.LineItemURL}
		}
	}
	if !offer.NamesAndRoles && len(offer.AGSScopes) == 0 {
		return nil
	}
	offer.ContextID = c.Context.ID
	root, err := p.ServiceRoot(offer)
	if err != nil {
		return &apierr.Error{Status: 503, Code: "NOT_READY", Description: "The sealing keys are not loaded yet."}
	}
	if offer.NamesAndRoles {
		c.NRPS = &nrpsClaim{ContextMembershipsURL: root + "/memberships", ServiceVersions: []string{"2.0"}}
	}
	if len(offer.AGSScopes) > 0 {
		c.AGS = &agsClaim{Scope: offer.AGSScopes}
		if !a.LineItemOnly {
			c.AGS.LineItems = root + "/lineitems"
		}
		if a.LineItemID != "" {
			c.AGS.LineItem = root + "/lineitems/" + url.PathEscape(a.LineItemID)
		}
	}
	return nil
}

// ServiceOffer is what a launch offers of the services ltiop serves, sealed into the
// launch's service grant: the services answer the tool no more than this, whatever its
// access token holds.
type ServiceOffer struct {
	// ContextID is the context of the launch, the only one the services touch.
	ContextID string
	// NamesAndRoles says the roster was offered (the NRPS claim was sent).
	NamesAndRoles bool
	// AGSScopes are the AGS scopes of the claim sent (none: no AGS claim).
	AGSScopes []string
	// LineItemID, when set, is the only line item offered (lineItemOnly: the claim has a
	// lineitem URL and no lineitems URL).
	LineItemID string
}

// canServe checks that ltiop can serve the service of field for this launch: a platform
// data API, and a context to bind the services to.
func (p *MintParams) canServe(c *idTokenClaims, field string) *apierr.Error {
	if p.ServiceRoot == nil {
		return fieldError(field, "ltiop serves it only with a platform data API (platformDataUrl, or the tool's spec.platformDataUrl)")
	}
	if c.Context == nil {
		return fieldError("context.id", "is required when ltiop serves %s: the services are bound to the context", field)
	}
	return nil
}

// okURL reports whether s is an absolute https URL (or http when allowed).
func (p *MintParams) okURL(s string) bool { return urls.Check(s, p.AllowHTTP) == nil }
