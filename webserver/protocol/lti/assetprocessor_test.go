package lti

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/api/ltiwire"
)

const (
	apActivity   = "cefbe1dc-bd58-496b-bf62-75dea59301b8"
	apSubmission = "d6446aaf-3f71-4eea-b2fd-20bd8d151506:1"
	apAssetID    = "dd33081e-81ba-4651-b528-098315f8a346"
	apReportURL  = "https://platform.example.edu/api/lti/asset_processors/83/reports"
	apAssetURL   = "https://platform.example.edu/api/lti/asset_processors/83/assets/" + apAssetID
	apEulaURL    = "https://platform.example.edu/api/lti/asset_processor_eulas/132"
)

// apSettingsClaims is a valid LtiAssetProcessorSettingsRequest (Canvas's shape).
func apSettingsClaims() map[string]any {
	c := rlrClaims()
	delete(c, ClaimResourceLink)
	delete(c, ClaimNRPS)
	delete(c, ClaimAGS)
	c[ClaimMessageType] = MessageAssetProcessorSettings
	c[ClaimActivity] = map[string]any{"id": apActivity, "title": "Essay 1"}
	return c
}

// apReviewClaims is a valid LtiReportReviewRequest, with the asset service and report
// claims some platforms add.
func apReviewClaims() map[string]any {
	c := apSettingsClaims()
	c[ClaimMessageType] = MessageReportReview
	c[ClaimSubmission] = map[string]any{"id": apSubmission}
	c[ClaimAsset] = map[string]any{"id": apAssetID}
	c[ClaimAssetReportType] = "originality"
	c[ClaimForUser] = map[string]any{"user_id": "972fd8aa-7f57-4d11-9400-916a0ed0d31d", "roles": []any{"http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"}}
	c[ClaimAssetService] = map[string]any{
		"scope": []any{ltiwire.ScopeAssetReadOnly},
		"assets": []any{map[string]any{"asset_id": apAssetID, "url": apAssetURL, "title": "Essay",
			"filename": "essay.docx", "size": 29, "content_type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
			"sha256_checksum": "cy5X2xVgjbMETnEFhDQvRMWfodOxsI51YpYNCtxjZig=", "timestamp": "2025-07-30T03:26:44-06:00"}},
	}
	c[ClaimAssetReport] = map[string]any{"scope": []any{ltiwire.ScopeReport}, "report_url": apReportURL}
	return c
}

// apEulaClaims is a valid LtiEulaRequest.
func apEulaClaims() map[string]any {
	c := rlrClaims()
	delete(c, ClaimResourceLink)
	c[ClaimMessageType] = MessageEula
	c[ClaimEulaService] = map[string]any{"url": apEulaURL, "scope": []any{ltiwire.ScopeEulaUser, ltiwire.ScopeEulaDeployment}}
	return c
}

func TestAssetProcessorMessagesAccepted(t *testing.T) {
	for name, base := range map[string]func() map[string]any{
		MessageAssetProcessorSettings: apSettingsClaims, MessageReportReview: apReviewClaims, MessageEula: apEulaClaims,
	} {
		t.Run(name, func(t *testing.T) {
			c, e := validateCase{base: base}.run(t)
			if e != nil {
				t.Fatalf("rejected: %v", e)
			}
			if c.MessageType != name {
				t.Fatalf("message type %q", c.MessageType)
			}
		})
	}
}

// T-AP-01..04: each required claim missing, or of the wrong type, refuses the launch with
// the claim's name and rule.
func TestAssetProcessorMessagesRejected(t *testing.T) {
	cases := []struct {
		name, rule, code string
		base             func() map[string]any
		mutate           func(c map[string]any)
	}{
		{"settings without activity", "T-AP-01", CodeMissingClaim, apSettingsClaims, func(c map[string]any) { delete(c, ClaimActivity) }},
		{"settings with an empty activity id", "T-AP-01", CodeMissingClaim, apSettingsClaims, func(c map[string]any) { c[ClaimActivity] = map[string]any{"title": "x"} }},
		{"settings without roles", "T-TOK-21", CodeMissingClaim, apSettingsClaims, func(c map[string]any) { delete(c, ClaimRoles) }},
		{"review without activity", "T-AP-02", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimActivity) }},
		{"review without submission", "T-AP-02", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimSubmission) }},
		{"review without asset", "T-AP-02", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimAsset) }},
		{"review without report type", "T-AP-02", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimAssetReportType) }},
		{"review without for_user", "T-AP-02", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimForUser) }},
		{"review without roles", "T-TOK-21", CodeMissingClaim, apReviewClaims, func(c map[string]any) { delete(c, ClaimRoles) }},
		{"eula without eulaservice", "T-AP-03", CodeMissingClaim, apEulaClaims, func(c map[string]any) { delete(c, ClaimEulaService) }},
		{"eula without url", "T-AP-03", CodeMissingClaim, apEulaClaims, func(c map[string]any) { c[ClaimEulaService] = map[string]any{"scope": []any{ltiwire.ScopeEulaUser}} }},
		{"eula without scope", "T-AP-03", CodeMissingClaim, apEulaClaims, func(c map[string]any) { c[ClaimEulaService] = map[string]any{"url": apEulaURL} }},
		{"activity a string", "T-AP-04", CodeInvalidClaim, apSettingsClaims, func(c map[string]any) { c[ClaimActivity] = apActivity }},
		{"report type a number", "T-AP-04", CodeInvalidClaim, apReviewClaims, func(c map[string]any) { c[ClaimAssetReportType] = 3 }},
		{"eulaservice an array", "T-AP-04", CodeInvalidClaim, apEulaClaims, func(c map[string]any) { c[ClaimEulaService] = []any{apEulaURL} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, e := validateCase{base: tc.base, claims: tc.mutate}.run(t)
			if e == nil {
				t.Fatal("accepted")
			}
			if e.Code != tc.code || e.Rule != tc.rule || e.Status != 400 {
				t.Fatalf("got %d %s %s (%s), want 400 %s %s", e.Status, e.Code, e.Rule, e.Description, tc.code, tc.rule)
			}
		})
	}
	// An unknown message type is still refused (T-TOK-18).
	_, e := validateCase{base: apSettingsClaims, claims: func(c map[string]any) { c[ClaimMessageType] = "LtiAssetProcessorSettingsReq" }}.run(t)
	if e == nil || e.Code != CodeInvalidMessageType {
		t.Fatalf("unknown message type: %v", e)
	}
}

// Blackboard's draft claim names (lti-ap/, lti-aip/, submission_id) read as the 1EdTech ones.
func TestAssetProcessorDraftNamespaces(t *testing.T) {
	payload, _ := json.Marshal(map[string]any{
		"https://purl.imsglobal.org/spec/lti-aip/claim/submission": map[string]any{"submission_id": "_907_1"},
		"https://purl.imsglobal.org/spec/lti-aip/claim/activity":   map[string]any{"id": "_55_1"},
		"https://purl.imsglobal.org/spec/lti-ap/claim/assetservice": map[string]any{
			"scope":  []any{"https://purl.imsglobal.org/spec/lti-ap/scope/asset.readonly"},
			"assets": []any{map[string]any{"asset_id": "_294_1", "url": "https://bb.example.edu/learn/api/v1/lti/assets/_294_1/data", "size": 11, "checksum": "B4b35OS5/BzXi1WreI6lSg=="}, "junk"},
		},
		"https://purl.imsglobal.org/spec/lti-ap/claim/assetreport": map[string]any{"scope": "https://purl.imsglobal.org/spec/lti-ap/scope/report", "report_url": "https://bb.example.edu/reports"},
	})
	c, err := ParseClaims(payload)
	if err != nil {
		t.Fatal(err)
	}
	ap := c.AssetProcessor
	if ap.Submission == nil || ap.Submission.ID != "_907_1" || ap.Activity == nil || ap.Activity.ID != "_55_1" {
		t.Fatalf("submission/activity: %+v %+v", ap.Submission, ap.Activity)
	}
	if ap.AssetService == nil || len(ap.AssetService.Assets) != 1 || ap.AssetService.Assets[0].Checksum == "" || ap.AssetService.Assets[0].Size != 11 {
		t.Fatalf("assets: %+v", ap.AssetService)
	}
	if s, ok := HasScope(ap.AssetService.Scope, ltiwire.ScopeAssetReadOnly); !ok || s != "https://purl.imsglobal.org/spec/lti-ap/scope/asset.readonly" {
		t.Fatalf("HasScope: %q %v", s, ok)
	}
	if _, ok := HasScope(ap.AssetReport.Scope, ltiwire.ScopeReport); !ok || ap.AssetReport.ReportURL == "" {
		t.Fatalf("report: %+v", ap.AssetReport)
	}
	if _, ok := HasScope([]string{ltiwire.ScopeReport}, ltiwire.ScopeAssetReadOnly); ok {
		t.Fatal("HasScope matched another scope")
	}
}

func TestAssetProcessorSimplifiedToken(t *testing.T) {
	c, e := validateCase{base: apReviewClaims}.run(t)
	if e != nil {
		t.Fatal(e)
	}
	tok := SimplifiedIDToken(c, PlatformInfo{ID: "p"})
	b, _ := json.Marshal(tok)
	var got struct {
		AssetProcessor struct {
			Activity   struct{ ID, Title string }
			Submission struct{ ID string }
			Assets     []map[string]any
			Report     struct{ AssetID, Type string }
			Services   map[string]struct {
				Available bool
				Scopes    []string
			}
		}
		Launch struct{ ForUser struct{ ID string } }
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	ap := got.AssetProcessor
	if ap.Activity.ID != apActivity || ap.Activity.Title != "Essay 1" || ap.Submission.ID != apSubmission ||
		ap.Report.AssetID != apAssetID || ap.Report.Type != "originality" || got.Launch.ForUser.ID == "" {
		t.Fatalf("token: %s", b)
	}
	if len(ap.Assets) != 1 || ap.Assets[0]["id"] != apAssetID || ap.Assets[0]["filename"] != "essay.docx" || ap.Assets[0]["url"] != nil {
		t.Fatalf("assets (the URL must not be shown): %s", b)
	}
	if !ap.Services["assetService"].Available || !ap.Services["assetReport"].Available || ap.Services["eula"].Available {
		t.Fatalf("services: %s", b)
	}
	// A resource link launch has no assetProcessor member.
	c2, _ := validateCase{}.run(t)
	if b, _ := json.Marshal(SimplifiedIDToken(c2, PlatformInfo{})); strings.Contains(string(b), "assetProcessor") {
		t.Fatalf("resource link launch shows assetProcessor: %s", b)
	}
}

// An ltiAssetProcessor content item (Canvas's ActivityAssetProcessor deep linking) with its
// report member is accepted when the platform accepts the type, and its report is sent.
func TestContentItemLTIAssetProcessor(t *testing.T) {
	items, _, err := DecodeDeepLinkingBody([]byte(`{"contentItems":[{"type":"ltiAssetProcessor","title":"Originality",
		"custom":{"mode":"strict"},"report":{"url":"https://tool.example.com/report","custom":{"view":"full"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	accepts := &DeepLinkingSettings{AcceptTypes: []string{ContentItemLTIAssetProcessor}}
	if e := ValidateContentItems(items, accepts); e != nil {
		t.Fatalf("refused: %v", e)
	}
	wire, _ := json.Marshal(items[0])
	if !strings.Contains(string(wire), `"report":{"url":"https://tool.example.com/report","custom":{"view":"full"}}`) {
		t.Fatalf("report not in the wire form: %s", wire)
	}
	for name, tc := range map[string]struct {
		item     ContentItem
		settings *DeepLinkingSettings
		field    string
	}{
		"not accepted by the platform": {ContentItem{Type: ContentItemLTIAssetProcessor}, &DeepLinkingSettings{AcceptTypes: []string{"ltiResourceLink"}}, "type"},
		"report url not a URL":         {ContentItem{Type: ContentItemLTIAssetProcessor, Report: &AssetProcessorReport{URL: "/report"}}, accepts, "report.url"},
		"report on another type":       {ContentItem{Type: ContentItemLink, URL: "https://a.example", Report: &AssetProcessorReport{}}, nil, "report"},
	} {
		e := ValidateContentItems([]ContentItem{tc.item}, tc.settings)
		if e == nil || e.Field != tc.field {
			t.Errorf("%s: %v, want a refusal of %s", name, e, tc.field)
		}
	}
}
