package lti

import "slices"

// PlatformInfo is what the service knows about the registration that launched:
// its ID (the API's platform ID), URL (iss), client ID and display name.
type PlatformInfo struct{ ID, URL, ClientID, Name string }

// IDToken is the simplified ID token of service-interface §2.3, returned by
// GET /api/idtoken. Optional fields are absent, never null.
type IDToken struct {
	LTIVersion string          `json:"ltiVersion"`
	User       IDTokenUser     `json:"user"`
	Platform   IDTokenPlatform `json:"platform"`
	Launch     *IDTokenLaunch  `json:"launch,omitempty"`
	Services   IDTokenServices `json:"services"`
	// AssetProcessor: Asset Processor and EULA launches (idtoken_assetprocessor.go). Their
	// for_user claim is launch.forUser, as in a submission review.
	AssetProcessor *IDTokenAssetProcessor `json:"assetProcessor,omitempty"`
	// LTI11 is the launch's LTI 1.1 identity (legacy.go), when it has one.
	LTI11 *IDTokenLTI11 `json:"lti11,omitempty"`
}

// IDTokenUser is idtoken.user. Roles are normalised (NormaliseRoles): never nil,
// possibly empty when the platform sent no recognised role.
type IDTokenUser struct {
	ID         string   `json:"id"`
	Roles      []string `json:"roles"`
	Email      string   `json:"email,omitempty"`
	Name       string   `json:"name,omitempty"`
	GivenName  string   `json:"givenName,omitempty"`
	FamilyName string   `json:"familyName,omitempty"`
	// LTI11LegacyUserID is the user's LTI 1.1 user_id, only when verified (legacy.go).
	LTI11LegacyUserID string `json:"lti11LegacyUserId,omitempty"`
}

// IDTokenPlatform is idtoken.platform.
type IDTokenPlatform struct {
	ID                string `json:"id"`
	URL               string `json:"url"`
	ClientID          string `json:"clientId"`
	DeploymentID      string `json:"deploymentId"`
	Name              string `json:"name"`
	GUID              string `json:"guid,omitempty"`
	ProductFamilyCode string `json:"productFamilyCode,omitempty"`
	Version           string `json:"version,omitempty"`
	Description       string `json:"description,omitempty"`
	ContactEmail      string `json:"contactEmail,omitempty"`
}

// IDTokenLaunch is idtoken.launch.
type IDTokenLaunch struct {
	Type         string               `json:"type"`   // LtiResourceLinkRequest, LtiDeepLinkingRequest or LtiSubmissionReviewRequest
	Target       string               `json:"target"` // the target_link_uri claim
	Context      *IDTokenContext      `json:"context,omitempty"`
	ResourceLink *IDTokenResourceLink `json:"resourceLink,omitempty"`
	Presentation *IDTokenPresentation `json:"presentation,omitempty"`
	Custom       map[string]string    `json:"custom"`
	// ForUser is the user a launch is about: the learner whose submission a submission
	// review shows (T-SR-07), the student of a report review.
	ForUser *IDTokenForUser `json:"forUser,omitempty"`
}

// IDTokenContext is idtoken.launch.context; Type holds §2.2 values only.
type IDTokenContext struct {
	ID    string   `json:"id"`
	Label string   `json:"label,omitempty"`
	Title string   `json:"title,omitempty"`
	Type  []string `json:"type"`
}

// IDTokenResourceLink is idtoken.launch.resourceLink.
type IDTokenResourceLink struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// IDTokenPresentation is idtoken.launch.presentation.
type IDTokenPresentation struct {
	Locale         string `json:"locale,omitempty"`
	DocumentTarget string `json:"document_target,omitempty"` // frame, iframe or window
	ReturnURL      string `json:"returnUrl,omitempty"`
	Width          int    `json:"width,omitempty"`
	Height         int    `json:"height,omitempty"`
}

// IDTokenServices is idtoken.services. ServiceKey is never set here: the caller
// seals one and sets it when NRPS, AGS or groups are available.
type IDTokenServices struct {
	DeepLinking         IDTokenDeepLinking `json:"deepLinking"`
	NamesAndRoles       IDTokenService     `json:"namesAndRoles"`
	AssignmentAndGrades IDTokenAGS         `json:"assignmentAndGrades"`
	Groups              IDTokenGroups      `json:"groups"`
	Outcomes            IDTokenService     `json:"outcomes"`
	ServiceKey          string             `json:"serviceKey,omitempty"`
}

// IDTokenService tells whether a service is available in this launch.
type IDTokenService struct {
	Available bool `json:"available"`
}

// IDTokenGroups is idtoken.services.groups: the Course Groups Service. GroupSets tells
// whether the launch also names the group sets URL (Sakai's may not).
type IDTokenGroups struct {
	Available bool `json:"available"`
	GroupSets bool `json:"groupSets"`
}

// IDTokenDeepLinking is idtoken.services.deepLinking; the settings are filled only
// when available (a deep linking request).
type IDTokenDeepLinking struct {
	Available                         bool     `json:"available"`
	AcceptTypes                       []string `json:"acceptTypes,omitzero"`
	AcceptPresentationDocumentTargets []string `json:"acceptPresentationDocumentTargets,omitzero"`
	AcceptMediaTypes                  []string `json:"acceptMediaTypes,omitempty"`
	AcceptMultiple                    *bool    `json:"acceptMultiple,omitempty"`
	Title                             string   `json:"title,omitempty"`
	Text                              string   `json:"text,omitempty"`
}

// IDTokenAGS is idtoken.services.assignmentAndGrades.
type IDTokenAGS struct {
	Available  bool     `json:"available"`
	Scopes     []string `json:"scopes,omitzero"`
	LineItemID string   `json:"lineItemId,omitempty"` // only when the claim names a single line item
}

var documentTargets = map[string]struct{}{"frame": {}, "iframe": {}, "window": {}}

// SimplifiedIDToken builds the §2.3 simplified ID token from validated claims and
// the registration. launch.target is the target_link_uri claim, which a deep
// linking request may lack (§12.3): the caller may fill in the login's value.
func SimplifiedIDToken(c *Claims, p PlatformInfo) *IDToken {
	t := &IDToken{
		LTIVersion: LTIVersion,
		User: IDTokenUser{
			ID:         c.Subject,
			Roles:      NormaliseRoles(c.Roles),
			Email:      c.Email,
			Name:       c.Name,
			GivenName:  c.GivenName,
			FamilyName: c.FamilyName,
		},
		Platform: IDTokenPlatform{
			ID:           p.ID,
			URL:          p.URL,
			ClientID:     p.ClientID,
			DeploymentID: c.DeploymentID,
			Name:         p.Name,
		},
	}
	if tp := c.ToolPlatform; tp != nil {
		if len(tp.GUID) <= MaxIdentifierLength {
			t.Platform.GUID = tp.GUID
		}
		t.Platform.ProductFamilyCode = tp.ProductFamilyCode
		t.Platform.Version = tp.Version
		t.Platform.Description = tp.Description
		t.Platform.ContactEmail = tp.ContactEmail
	}

	l := &IDTokenLaunch{Type: c.MessageType, Target: c.TargetLinkURI, Custom: make(map[string]string, len(c.Custom))}
	for k, v := range c.Custom {
		l.Custom[k] = v
	}
	if ctx := c.Context; ctx != nil && ctx.ID != "" {
		l.Context = &IDTokenContext{ID: ctx.ID, Label: ctx.Label, Title: ctx.Title, Type: NormaliseContextTypes(ctx.Type)}
	}
	if rl := c.ResourceLink; rl != nil && (rl.ID != "" || c.MessageType != MessageDeepLinking) {
		l.ResourceLink = &IDTokenResourceLink{ID: rl.ID, Title: rl.Title, Description: rl.Description}
	} else if c.MessageType != MessageDeepLinking {
		l.ResourceLink = &IDTokenResourceLink{}
	}
	if lp := c.LaunchPresentation; lp != nil {
		pr := IDTokenPresentation{Locale: lp.Locale, ReturnURL: lp.ReturnURL, Width: max(lp.Width, 0), Height: max(lp.Height, 0)}
		if _, ok := documentTargets[lp.DocumentTarget]; ok {
			pr.DocumentTarget = lp.DocumentTarget
		}
		if pr != (IDTokenPresentation{}) {
			l.Presentation = &pr
		}
	}
	l.ForUser = forUserOf(c)
	t.Launch = l

	s := &t.Services
	if dl := c.DeepLinking; dl != nil && c.MessageType == MessageDeepLinking {
		multiple := dl.AcceptMultiple != nil && *dl.AcceptMultiple
		s.DeepLinking = IDTokenDeepLinking{
			Available:                         true,
			AcceptTypes:                       nonNil(dl.AcceptTypes),
			AcceptPresentationDocumentTargets: nonNil(dl.AcceptPresentationDocumentTargets),
			AcceptMediaTypes:                  slices.Clone(dl.AcceptMediaTypes),
			AcceptMultiple:                    &multiple,
			Title:                             dl.Title,
			Text:                              dl.Text,
		}
	}
	s.NamesAndRoles.Available = c.NRPS != nil && c.NRPS.ContextMembershipsURL != ""
	if a := c.AGS; a != nil && (a.LineItems != "" || a.LineItem != "") {
		s.AssignmentAndGrades = IDTokenAGS{Available: true, Scopes: nonNil(a.Scope), LineItemID: a.LineItem}
	}
	if g := c.Groups; g != nil && g.ContextGroupsURL != "" {
		s.Groups = IDTokenGroups{Available: true, GroupSets: g.ContextGroupSetsURL != ""}
	}
	t.AssetProcessor = assetProcessorToken(&c.AssetProcessor)
	return t
}

// nonNil copies s, turning nil into an empty slice (JSON []).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
