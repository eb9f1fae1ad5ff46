package onboarding

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver/clients/dynreg"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
)

// PendingRegistration is what the integrator sees of a registration awaiting approval.
// familyCode, version, supportedScopes and supportedMessages are the LTIAAS names and
// shapes (its Node SDK validates them: always present); productFamilyCode,
// scopesSupported and messagesSupported are ltiop's earlier names, kept.
type PendingRegistration struct {
	ID                     string             `json:"id"`
	Issuer                 string             `json:"url"`
	FamilyCode             string             `json:"familyCode"`
	ProductFamilyCode      string             `json:"productFamilyCode,omitempty"`
	Version                string             `json:"version"`
	AuthenticationEndpoint string             `json:"authenticationEndpoint"`
	AccesstokenEndpoint    string             `json:"accesstokenEndpoint"`
	JWKSURL                string             `json:"jwksUrl"`
	RegistrationEndpoint   string             `json:"registrationEndpoint"`
	SupportedScopes        []string           `json:"supportedScopes"`
	SupportedMessages      []SupportedMessage `json:"supportedMessages"`
	ScopesSupported        []string           `json:"scopesSupported,omitempty"`
	MessagesSupported      []string           `json:"messagesSupported,omitempty"`
}

// pendingView is the PendingRegistration of the platform pc.
func pendingView(id string, pc *dynreg.PlatformConfig) PendingRegistration {
	out := PendingRegistration{
		ID: id, Issuer: pc.Issuer, FamilyCode: pc.ProductFamilyCode, ProductFamilyCode: pc.ProductFamilyCode,
		Version: pc.Version, AuthenticationEndpoint: pc.AuthorizationEndpoint, AccesstokenEndpoint: pc.TokenEndpoint,
		JWKSURL: pc.JWKSURI, RegistrationEndpoint: pc.RegistrationEndpoint, ScopesSupported: pc.ScopesSupported,
		SupportedScopes: append([]string{}, pc.ScopesSupported...), SupportedMessages: supportedMessages(pc),
	}
	for _, m := range pc.MessagesSupported {
		out.MessagesSupported = append(out.MessagesSupported, m.Type)
	}
	return out
}

// CompleteRequest is the body of POST /api/registrations/{id}/complete.
type CompleteRequest struct {
	PlatformName string          `json:"platformName,omitempty"`
	AutoActivate *bool           `json:"autoActivate,omitempty"`
	Messages     []MessageChoice `json:"messages,omitempty"`
}

func (o *Onboarding) openPending(r *http.Request) (*pending, *dynreg.PlatformConfig, string, *httpapi.Error) {
	id := r.PathValue("id")
	opened, err := o.keyring.OpenToken(sessions.PurposeRegistration, id, o.now())
	var p pending
	if err == nil {
		err = json.Unmarshal(opened.Payload, &p)
	}
	var pc *dynreg.PlatformConfig
	if err == nil {
		pc, err = dynreg.ParseConfiguration(p.Config)
	}
	if err != nil {
		return nil, nil, "", httpapi.Errorf(http.StatusNotFound, "REGISTRATION_NOT_FOUND",
			"No pending registration has this id (it may have expired: registrations wait at most one hour).")
	}
	return &p, pc, opened.ID, nil
}

// Get serves GET /api/registrations/{id}: the platform asking to be registered
// (raw=true: its OpenID configuration as received).
func (o *Onboarding) Get(w http.ResponseWriter, r *http.Request) {
	p, pc, tokenID, herr := o.openPending(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	if raw := r.URL.Query().Get("raw"); raw == "true" || raw == "1" {
		// The raw answer carries the LMS's registration token: once completed, it has
		// served its purpose and is not handed out again.
		if done, err := replay.Seen(r.Context(), o.used, completedKey(tokenID), o.now()); err != nil {
			httpapi.WriteError(w, httpapi.ReplayStoreUnavailable(err))
			return
		} else if done {
			httpapi.WriteError(w, errAlreadyCompleted())
			return
		}
		b, err := rawRegistration(p)
		if err != nil {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The platform's configuration could not be encoded."))
			return
		}
		httpapi.WriteRawJSON(w, http.StatusOK, b)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, pendingView(r.PathValue("id"), pc))
}

// completedKey records in the replay store that the pending registration tokenID was
// completed (or its completion attempted).
func completedKey(tokenID string) string { return "registration:" + tokenID }

func errAlreadyCompleted() *httpapi.Error {
	return httpapi.Errorf(http.StatusConflict, "REGISTRATION_ALREADY_COMPLETED", "This registration was already completed.")
}

// Complete serves POST /api/registrations/{id}/complete: register now, and answer the
// closing page for the integrator to show in the LMS's frame.
func (o *Onboarding) Complete(w http.ResponseWriter, r *http.Request) {
	p, pc, tokenID, herr := o.openPending(r)
	var body CompleteRequest
	if herr == nil {
		herr = httpapi.DecodeJSON(r, &body)
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	for i, m := range body.Messages {
		if msg := m.check(); msg != "" {
			httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
				"messages["+strconv.Itoa(i)+"]"+msg))
			return
		}
	}
	active := o.opts.AutoActivate
	if body.AutoActivate != nil {
		active = *body.AutoActivate
	}
	// Approved but left inactive, it awaits activation like any other: the bound holds.
	done := func(string) {}
	if !active {
		if done, herr = o.bound.reserve(); herr != nil {
			httpapi.WriteError(w, herr)
			return
		}
	}
	id := ""
	defer func() { done(id) }()
	now := o.now()
	if first, err := o.used.Use(r.Context(), completedKey(tokenID), now.Add(pendingTTL), now); err != nil {
		httpapi.WriteError(w, httpapi.ReplayStoreUnavailable(err))
		return
	} else if !first {
		httpapi.WriteError(w, errAlreadyCompleted())
		return
	}
	id, herr = o.complete(r.Context(), pc, p.Token, body.PlatformName, active, body.Messages)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	page, err := dynreg.ClosingPage("ltiop is registered with this platform. You can close this window.", "")
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The closing page could not be built."))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"html": page, "platformId": id})
}

// CanvasConfiguration serves GET /register/canvas: the JSON to paste into a Canvas LTI
// developer key ("Paste JSON").
func (o *Onboarding) CanvasConfiguration(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, dynreg.CanvasDeveloperKey(o.opts.Tool))
}

// isAssetProcessorMessage: the Asset Processor and EULA message types a pre-approval may
// keep (offered only when assetProcessor.enabled).
func isAssetProcessorMessage(m string) bool {
	return m == dynreg.MessageAssetProcessorSettings || m == dynreg.MessageReportReview || m == dynreg.MessageEula
}
