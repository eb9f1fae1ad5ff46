package toolmode

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// DeepLinkingForm serves POST /api/deeplinking/form: {form}, a self-submitting HTML form
// that returns the selected items to the platform.
func (t *Tool) DeepLinkingForm(w http.ResponseWriter, r *http.Request) {
	jwt, target, herr := t.deepLinkingResponse(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	form, err := deepLinkingForm(target, jwt)
	if err != nil {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadGateway, httpapi.CodeUpstream,
			"The platform's deep_link_return_url cannot be used: "+err.Error()))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"form": form})
}

// deepLinkingForms make the form DeepLinkingForm returns. Its id is documented
// (openapi.json): integrators whose Content-Security-Policy blocks the form's inline script
// submit it by this id. A hidden copy carries LTIAAS's id, ltiaas_dl, which the LTIAAS
// deep-linking guide submits by: integrators' scripts written for LTIAAS keep working.
var deepLinkingForms = httpapi.NewAutoPostWithAlias("ltiop-deep-linking-response", "ltiaas_dl")

// deepLinkingForm is the HTML fragment that returns a deep-linking response: a form that
// POSTs the single field JWT (T-DL-01) to the platform's return URL, query kept (T-DL-11),
// both escaped by html/template (T-DL-10). lti.DeepLinkingResponse has already refused a
// return URL that is not absolute http(s).
func deepLinkingForm(returnURL, jwt string) (string, error) {
	return deepLinkingForms.Form(returnURL, []httpapi.Field{{Name: "JWT", Value: jwt}})
}

// DeepLinkingMessage serves POST /api/deeplinking (and /api/deeplinking/message):
// {message, target} for integrators that build the form themselves.
func (t *Tool) DeepLinkingMessage(w http.ResponseWriter, r *http.Request) {
	jwt, target, herr := t.deepLinkingResponse(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"message": jwt, "target": target})
}

// deepLinkingResponse validates the body against the launch's settings and signs the
// LtiDeepLinkingResponse with the registration's tool key.
func (t *Tool) deepLinkingResponse(r *http.Request) (string, string, *httpapi.Error) {
	g := grantFrom(r.Context())
	if g.claims == nil || g.claims.MessageType != lti.MessageDeepLinking || g.claims.DeepLinking == nil {
		return "", "", notAvailable("Deep linking is available only for LtiDeepLinkingRequest launches.")
	}
	var raw json.RawMessage
	if herr := httpapi.DecodeJSON(r, &raw); herr != nil {
		return "", "", herr
	}
	items, options, err := lti.DecodeDeepLinkingBody(raw) // errors name the item and field
	if err != nil {
		return "", "", httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, err.Error()+".")
	}
	_, p, herr := t.credentials(g)
	if herr != nil {
		return "", "", herr
	}
	jwt, target, err := lti.DeepLinkingResponse(lti.DeepLinkingResponseParams{
		Request: g.claims, ClientID: p.Spec.ClientID, KID: p.Key.KID, Key: p.Key,
		Items: items, Options: options, Now: t.now(),
	})
	var itemErr *lti.ContentItemError
	var ltiErr *httpapi.Error
	switch {
	case errors.As(err, &itemErr): // validated against the launch's settings before signing
		return "", "", httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, itemErr.Error()+".")
	case errors.As(err, &ltiErr):
		return "", "", ltiErr
	case err != nil:
		return "", "", httpapi.Errorf(http.StatusInternalServerError, httpapi.CodeInternal, "The deep-linking response could not be built.")
	}
	return jwt, target, nil
}
