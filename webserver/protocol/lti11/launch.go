package lti11

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// Message and version values of an LTI 1.1 launch.
const (
	MessageBasicLaunch = "basic-lti-launch-request"
	// Version is what /api/idtoken reports as ltiVersion for a 1.1 launch: the LTIAAS SDK's
	// LTIVersion.LTI_1_1.
	Version = "1.1.1"
)

// ClaimParams holds, in the claims of a 1.1 launch, the launch parameters as received
// (oauth_signature removed): /api/idtoken?raw=true answers with them.
const ClaimParams = "https://ltiop.dev/claim/lti11_params"

// RawParams is /api/idtoken?raw=true of a 1.1 launch: the parameters its claims keep
// under ClaimParams (as received, without oauth_signature), with ltiVersion, as the LTIAAS
// SDK reads a raw OAuth payload.
func RawParams(claims json.RawMessage) (map[string]json.RawMessage, error) {
	var all struct {
		Params map[string]json.RawMessage `json:"https://ltiop.dev/claim/lti11_params"` // ClaimParams
	}
	if err := json.Unmarshal(claims, &all); err != nil {
		return nil, err
	}
	if all.Params == nil {
		all.Params = map[string]json.RawMessage{}
	}
	all.Params["ltiVersion"] = json.RawMessage(`"` + Version + `"`)
	return all.Params, nil
}

// IsLaunch reports whether a parsed form post is an LTI 1.1 launch rather than an OIDC
// authentication response: it names an LTI 1.x message type and carries no id_token. Tool
// mode's launch URL serves both versions with this test.
func IsLaunch(form url.Values) bool {
	return form.Get("lti_message_type") != "" && form.Get("id_token") == ""
}

// CheckLaunch checks the LTI parameters a basic launch requires (LTI11-PARAM-01):
// lti_message_type basic-lti-launch-request, lti_version LTI-1p0 (or LTI-1p1/LTI-1p2, which
// launch the same way), resource_link_id, each once; and a user_id when roles are sent.
func CheckLaunch(ps Params) *apierr.Error {
	if mt := ps.Get("lti_message_type"); mt != MessageBasicLaunch {
		return newError(400, CodeInvalidMessageType, "LTI11-PARAM-01",
			"Only basic-lti-launch-request is accepted over LTI 1.1, not "+strconv.Quote(truncate(mt, 60))+".")
	}
	var missing []string
	for _, name := range []string{"lti_message_type", "lti_version", "resource_link_id"} {
		if ps.Count(name) != 1 || ps.Get(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return newError(400, CodeMissingParameters, "LTI11-PARAM-01",
			"The launch lacks (or repeats) the LTI parameters "+strings.Join(missing, ", ")+".")
	}
	switch ps.Get("lti_version") {
	case "LTI-1p0", "LTI-1p1", "LTI-1p2":
	default:
		return newError(400, CodeMissingParameters, "LTI11-PARAM-01", "lti_version must be LTI-1p0.")
	}
	if len(ps.Get("resource_link_id")) > lti.MaxIdentifierLength || len(ps.Get("user_id")) > lti.MaxIdentifierLength ||
		len(ps.Get("context_id")) > lti.MaxIdentifierLength {
		return newError(400, CodeInvalidParameters, "LTI11-PARAM-03",
			"resource_link_id, user_id and context_id may hold at most 255 characters.")
	}
	for _, p := range ps { // the ids reach the integrator as JSON: they must be text
		if !utf8.ValidString(p.Name) || !utf8.ValidString(p.Value) {
			return newError(400, CodeInvalidParameters, "LTI11-PARAM-03", "The launch parameters must be UTF-8 text.")
		}
	}
	return nil
}

// Origin is what ltiop knows of the launch besides its parameters.
type Origin struct {
	Issuer, ClientID string // the registration's spec.url and spec.clientId
	TargetLinkURI    string // the URL the LMS launched (ltiop's public launch URL)
}

// Claims maps a checked 1.1 launch to LTI 1.3 claims, so one launch record, one simplified
// ID token and one service grant serve both versions: user_id → sub, roles (comma
// separated) → roles, context_* → context, resource_link_* → resource_link, custom_* →
// custom, launch_presentation_* → launch_presentation, tool_consumer_* → tool_platform,
// lis_* → lis, and lis_outcome_service_url with lis_result_sourcedid → the basicoutcome
// claim. The deployment is the consumer key (1.1 has none). The parameters as received,
// without the signature, are kept under ClaimParams.
func Claims(ps Params, o Origin) json.RawMessage {
	get := ps.Get
	c := map[string]any{
		"iss":                  o.Issuer,
		"aud":                  o.ClientID,
		"sub":                  get("user_id"),
		lti.ClaimMessageType:   lti.MessageResourceLink,
		lti.ClaimVersion:       get("lti_version"),
		lti.ClaimDeploymentID:  get("oauth_consumer_key"),
		lti.ClaimTargetLinkURI: o.TargetLinkURI,
		lti.ClaimResourceLink: omitEmpty(map[string]string{"id": get("resource_link_id"),
			"title": get("resource_link_title"), "description": get("resource_link_description")}, "id"),
		lti.ClaimRoles: splitList(get("roles")),
	}
	put := func(k, v string) {
		if v != "" {
			c[k] = v
		}
	}
	put("name", get("lis_person_name_full"))
	put("given_name", get("lis_person_name_given"))
	put("family_name", get("lis_person_name_family"))
	put("email", get("lis_person_contact_email_primary"))
	if id := get("context_id"); id != "" {
		ctx := map[string]any{"id": id}
		if v := get("context_label"); v != "" {
			ctx["label"] = v
		}
		if v := get("context_title"); v != "" {
			ctx["title"] = v
		}
		if t := splitList(get("context_type")); len(t) > 0 {
			ctx["type"] = t
		}
		c[lti.ClaimContext] = ctx
	}
	if tp := omitEmpty(map[string]string{
		"guid":                get("tool_consumer_instance_guid"),
		"name":                get("tool_consumer_instance_name"),
		"description":         get("tool_consumer_instance_description"),
		"url":                 get("tool_consumer_instance_url"),
		"contact_email":       get("tool_consumer_instance_contact_email"),
		"product_family_code": get("tool_consumer_info_product_family_code"),
		"version":             get("tool_consumer_info_version"),
	}); len(tp) > 0 {
		c[lti.ClaimToolPlatform] = tp
	}
	lp := map[string]any{}
	for k, v := range omitEmpty(map[string]string{
		"document_target": get("launch_presentation_document_target"),
		"return_url":      get("launch_presentation_return_url"),
		"locale":          get("launch_presentation_locale"),
	}) {
		lp[k] = v
	}
	for _, dim := range []string{"width", "height"} {
		if n, err := strconv.Atoi(get("launch_presentation_" + dim)); err == nil && n > 0 {
			lp[dim] = n
		}
	}
	if len(lp) > 0 {
		c[lti.ClaimLaunchPresentation] = lp
	}
	custom := map[string]string{}
	raw := map[string]string{}
	for _, p := range ps {
		if name, ok := strings.CutPrefix(p.Name, "custom_"); ok && name != "" {
			if _, seen := custom[name]; !seen {
				custom[name] = p.Value
			}
		}
		if p.Name != "oauth_signature" {
			if _, seen := raw[p.Name]; !seen {
				raw[p.Name] = p.Value
			}
		}
	}
	c[lti.ClaimCustom] = custom
	if lis := omitEmpty(map[string]string{
		"person_sourcedid":          get("lis_person_sourcedid"),
		"course_offering_sourcedid": get("lis_course_offering_sourcedid"),
		"course_section_sourcedid":  get("lis_course_section_sourcedid"),
	}); len(lis) > 0 {
		c[lti.ClaimLIS] = lis
	}
	if u, id := get("lis_outcome_service_url"), get("lis_result_sourcedid"); u != "" && id != "" {
		c[lti.ClaimBasicOutcome] = map[string]string{"lis_outcome_service_url": u, "lis_result_sourcedid": id}
	}
	c[ClaimParams] = raw
	b, _ := json.Marshal(c) // strings, numbers and maps of them: cannot fail
	return b
}

// splitList splits a comma-separated 1.1 list (roles, context_type), trimming blanks.
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// omitEmpty drops empty values; if key is given and empty, the whole map is kept anyway
// (a required member).
func omitEmpty(m map[string]string, keep ...string) map[string]string {
	for k, v := range m {
		if v == "" && !contains(keep, k) {
			delete(m, k)
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
