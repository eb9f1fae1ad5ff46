package ltiplatform

// Deep Linking 2.0 responses a tool posts back to the platform (lti-conformance.md
// §1.8, §5; DL §4.5; SEC §5.2.3).
//
// Rule IDs. §1.8 says "P-DLR-01..09 one test per item above"; the items of its SEC
// §5.2.3 list, in order, are numbered:
//
//	P-DLR-01  signature with the tool's public key (alg from the header, none
//	          forbidden — SEC §5.2.5); also the structure, kid and key lookup the
//	          signature check needs
//	P-DLR-02  iss == the tool's client_id
//	P-DLR-03  aud contains the platform issuer and no untrusted audience (ltiop
//	          trusts none: aud must be exactly the issuer, as a string or an array)
//	P-DLR-04  several audiences → azp present and == the platform issuer (and an azp
//	          that is present must be the issuer)
//	P-DLR-05  alg should be RS256 (ltiop: must; every alg other than none and RS256)
//	P-DLR-06  exp in the future (skew allowed); also nbf when present
//	P-DLR-07  iat present and not in the future (skew allowed)
//	P-DLR-08  nonce present (a non-empty string)
//	P-DLR-09  nonce not replayed — the caller's: DeepLinkingResponse.Nonce and
//	          Expires are what to record
//
// and, as §1.8 names them: P-DLR-10 deployment_id, P-DLR-11 message_type and
// version, P-DLR-12 data, P-DLR-13 content_items.
//
// Order of the checks: structure, alg, key, signature, iss, aud, azp, exp, nbf,
// iat, nonce, deployment_id, message_type, version, data, content_items. The first
// failure is returned.
//
// Data (P-DLR-12, DL §4.5.5: "required if present in LtiDeepLinkingRequest"): when
// the request carried data, the response must carry the same string, compared
// byte for byte after JSON decoding (so "a\/b" matches "a/b"); a request whose data
// was "" also accepts a response without the claim (ltijs drops falsy data). When
// the request had no data, a response data claim that is absent, null or "" is
// tolerated, and any other value refused: it cannot be the echo of this request,
// so the response answers another one.

import (
	"context"
	"crypto/subtle"
	"errors"
	"strconv"
	"time"

	"github.com/ltiop/ltiop/internal/jsonscan"
	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// DeepLinkingRequest is what the platform sent in the LtiDeepLinkingRequest the
// response answers.
type DeepLinkingRequest struct {
	// Issuer is the platform's iss (the response's aud), ClientID the tool's
	// client_id (the response's iss), DeploymentID the request's deployment_id.
	Issuer, ClientID, DeploymentID string
	// Data is the deep_linking_settings.data the request carried, if HasData.
	Data    string
	HasData bool
	// AcceptTypes, AcceptMultiple and AcceptLineItem are the request's
	// deep_linking_settings; AcceptLineItem nil means not said (line items allowed).
	AcceptTypes    []string
	AcceptMultiple bool
	AcceptLineItem *bool
}

// DeepLinkingResponse is a verified LtiDeepLinkingResponse.
type DeepLinkingResponse struct {
	// ContentItems are the items, decoded by lti.ContentItem and checked by
	// lti.ValidateContentItems; nil when the claim is absent, null or [].
	ContentItems []lti.ContentItem
	// Msg, Log, ErrorMsg and ErrorLog are the msg, log, errormsg and errorlog
	// claims ("" when absent or not strings).
	Msg, Log, ErrorMsg, ErrorLog string
	// Data is the echoed data ("" when absent).
	Data string
	// Nonce and Expires are what the caller's replay cache records (P-DLR-09):
	// refuse a second response with this nonce until Expires (+ skew).
	Nonce   string
	Expires time.Time
	// Raw is the verified payload JSON.
	Raw []byte
}

var toolJWTDeepLinking = toolJWTKind{
	name:      "deep linking response JWT",
	badStatus: 400,
	ruleShape: "P-DLR-01",
	ruleNone:  "P-DLR-01",
	ruleAlg:   "P-DLR-05",
	ruleKey:   "P-DLR-01",
	ruleExp:   "P-DLR-06",
	ruleIat:   "P-DLR-07",
}

// VerifyDeepLinkingResponse verifies the JWT form field a tool posted to the
// deep_link_return_url against the request it answers (see the rule list at the
// top of this file). key returns the tool's public key for the header's kid (""
// when there is none). now is the verification time (zero: time.Now()); skew is
// the leeway on exp, nbf and iat (negative: none).
//
// Statuses: 400 for a malformed JWT and for the LTI claims (deployment_id,
// message_type, version, data, content_items), 401 for alg, key, signature, iss,
// aud, azp, exp, nbf, iat and nonce, 503 (OAuth temporarily_unavailable) when
// key fails with anything but lti.ErrUnknownKey, 500 when req or key is unusable.
// The response is a browser form post, not an OAuth exchange: the error's OAuth is empty
// except on the 503 and 500.
//
// On success the nonce has not been checked for replay (P-DLR-09): the caller does.
func VerifyDeepLinkingResponse(ctx context.Context, token string, req DeepLinkingRequest, key lti.KeyFunc,
	now time.Time, skew time.Duration) (*DeepLinkingResponse, *apierr.Error) {
	if req.Issuer == "" || req.ClientID == "" || req.DeploymentID == "" || key == nil {
		return nil, newError(500, CodePlatformMisconfigured, OAuthServerError, "",
			"The deep linking request is not known well enough (issuer, client_id, deployment_id, tool keys) to verify its response.")
	}
	k := &toolJWTDeepLinking
	t, e := toolJWTSplit(token, k)
	if e != nil {
		return nil, e
	}
	if e := toolJWTVerify(ctx, t, k, key); e != nil {
		return nil, e
	}
	c := &t.claims

	// P-DLR-02.
	if iss, ok := toolJWTString(c.iss); !ok || iss != req.ClientID {
		if toolJWTAbsent(c.iss) {
			return nil, k.err(401, CodeIssuerMismatch, "P-DLR-02", "has no iss.")
		}
		return nil, k.err(401, CodeIssuerMismatch, "P-DLR-02", "iss is not the tool's client_id.")
	}
	// P-DLR-03: the platform issuer and nothing else.
	aud, ok := toolJWTAudience(c.aud)
	switch {
	case !ok:
		return nil, k.err(401, CodeAudienceMismatch, "P-DLR-03", "aud is not a string or an array of strings.")
	case !aud.Contains(req.Issuer):
		return nil, k.err(401, CodeAudienceMismatch, "P-DLR-03", "aud does not contain the platform's issuer.")
	}
	for _, a := range aud {
		if a != req.Issuer {
			return nil, k.err(401, CodeAudienceMismatch, "P-DLR-03", "aud contains another audience than the platform.")
		}
	}
	// P-DLR-04.
	switch azp, isStr := toolJWTString(c.azp); {
	case toolJWTAbsent(c.azp):
		if len(aud) > 1 {
			return nil, k.err(401, CodeAzpMismatch, "P-DLR-04", "has several audiences but no azp.")
		}
	case !isStr || azp != req.Issuer:
		return nil, k.err(401, CodeAzpMismatch, "P-DLR-04", "azp is not the platform's issuer.")
	}
	// P-DLR-06, P-DLR-07.
	now, skew = toolJWTClock(now, skew)
	exp, _, e := toolJWTTimes(c, k, now, skew)
	if e != nil {
		return nil, e
	}
	// P-DLR-08 (replay, P-DLR-09, is the caller's).
	nonce, _ := toolJWTString(c.nonce)
	switch {
	case nonce == "":
		return nil, k.err(401, CodeMissingNonce, "P-DLR-08", "has no nonce (a non-empty string).")
	case len(nonce) > MaxReplayIDLength:
		return nil, k.err(401, CodeInvalidNonce, "P-DLR-08",
			"nonce is longer than "+strconv.Itoa(MaxReplayIDLength)+" bytes.")
	}
	// P-DLR-10.
	switch dep, isStr := toolJWTString(c.deploymentID); {
	case toolJWTAbsent(c.deploymentID):
		return nil, k.err(400, CodeDeploymentMismatch, "P-DLR-10", "has no deployment_id claim.")
	case !isStr:
		return nil, k.err(400, CodeDeploymentMismatch, "P-DLR-10", "deployment_id claim is not a string.")
	case dep != req.DeploymentID:
		return nil, k.err(400, CodeDeploymentMismatch, "P-DLR-10", "deployment_id is not the deep linking request's.")
	}
	// P-DLR-11.
	switch mt, isStr := toolJWTString(c.messageType); {
	case toolJWTAbsent(c.messageType):
		return nil, k.err(400, CodeInvalidMessageType, "P-DLR-11", "has no message_type claim.")
	case !isStr || mt != lti.MessageDeepLinkingResponse:
		return nil, k.err(400, CodeInvalidMessageType, "P-DLR-11", "message_type must be "+lti.MessageDeepLinkingResponse+".")
	}
	switch v, isStr := toolJWTString(c.version); {
	case toolJWTAbsent(c.version):
		return nil, k.err(400, CodeInvalidLTIVersion, "P-DLR-11", "has no LTI version claim.")
	case !isStr || v != lti.LTIVersion:
		return nil, k.err(400, CodeInvalidLTIVersion, "P-DLR-11", "LTI version must be "+lti.LTIVersion+".")
	}
	// P-DLR-12.
	data, e := dlrCheckData(c.data, &req, k)
	if e != nil {
		return nil, e
	}
	// P-DLR-13.
	items, e := dlrContentItems(c.contentItems, &req)
	if e != nil {
		return nil, e
	}

	r := &DeepLinkingResponse{ContentItems: items, Data: data, Nonce: nonce, Expires: exp, Raw: t.payload}
	r.Msg, _ = toolJWTString(c.msg)
	r.Log, _ = toolJWTString(c.log)
	r.ErrorMsg, _ = toolJWTString(c.errorMsg)
	r.ErrorLog, _ = toolJWTString(c.errorLog)
	return r, nil
}

// dlrCheckData checks the data claim against the request (see the top of the file).
func dlrCheckData(raw string, req *DeepLinkingRequest, k *toolJWTKind) (string, *apierr.Error) {
	data, isStr := toolJWTString(raw)
	absent := toolJWTAbsent(raw)
	switch {
	case !absent && !isStr:
		return "", k.err(400, CodeDataMismatch, "P-DLR-12", "data claim is not a string.")
	case !req.HasData:
		if data != "" {
			return "", k.err(400, CodeDataMismatch, "P-DLR-12",
				"carries data, but the deep linking request had none: it answers another request.")
		}
		return "", nil
	case absent && req.Data == "":
		return "", nil
	case absent:
		return "", k.err(400, CodeDataMismatch, "P-DLR-12", "does not return the deep linking request's data.")
	case subtle.ConstantTimeCompare([]byte(data), []byte(req.Data)) != 1:
		return "", k.err(400, CodeDataMismatch, "P-DLR-12", "data is not the deep linking request's data.")
	}
	return data, nil
}

// dlrContentItems decodes the content_items claim with lti.ContentItem and checks
// it with lti.ValidateContentItems against the request's settings: types in
// accept_types (standard types ignoring case), at most one item unless
// accept_multiple, no lineItem when accept_lineitem is false, and the DL §3
// member rules. Errors name the member: content_items[2].type.
func dlrContentItems(raw string, req *DeepLinkingRequest) ([]lti.ContentItem, *apierr.Error) {
	if toolJWTAbsent(raw) {
		return nil, nil
	}
	invalid := func(path, msg string) *apierr.Error {
		return newError(400, CodeInvalidContentItem, "", "P-DLR-13", path+": "+msg)
	}
	if jsonscan.KindOf(raw) != jsonscan.Array {
		return nil, invalid("content_items", "must be an array")
	}
	var items []lti.ContentItem
	var sc jsonscan.Scanner
	sc.Reset(raw)
	sc.Array()
	for i := 0; sc.NextElement(); i++ {
		elem := sc.Raw()
		path := "content_items[" + strconv.Itoa(i) + "]"
		if jsonscan.KindOf(elem) != jsonscan.Object {
			return nil, invalid(path, "a content item must be a JSON object")
		}
		var it lti.ContentItem
		if err := it.UnmarshalJSON([]byte(elem)); err != nil {
			var ce *lti.ContentItemError
			if !errors.As(err, &ce) {
				return nil, invalid(path, "is not a valid content item")
			}
			return nil, invalid(dlrItemPath(path, ce.Field), ce.Message)
		}
		items = append(items, it)
	}
	if sc.End() != nil { // the payload was valid JSON: cannot happen
		return nil, invalid("content_items", "must be an array")
	}
	if len(items) == 0 {
		return nil, nil
	}
	settings := &lti.DeepLinkingSettings{
		AcceptTypes:    req.AcceptTypes,
		AcceptMultiple: &req.AcceptMultiple,
		AcceptLineItem: req.AcceptLineItem,
	}
	if ce := lti.ValidateContentItems(items, settings); ce != nil {
		path := "content_items"
		if ce.Index >= 0 {
			path += "[" + strconv.Itoa(ce.Index) + "]"
		}
		e := invalid(dlrItemPath(path, ce.Field), ce.Message)
		switch ce.Rule {
		case "T-DL-04", "T-DL-05", "T-DL-06": // not accepted by the request, rather than malformed
			e.Code = CodeContentItemRejected
		}
		return nil, e
	}
	return items, nil
}

func dlrItemPath(path, field string) string {
	if field == "" {
		return path
	}
	return path + "." + field
}
