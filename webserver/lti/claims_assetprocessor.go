package lti

// Claims, message types and scopes of LTI Asset Processor 1.0 and the EULA service
// (1EdTech), and how they are decoded. The 1EdTech names live under
// https://purl.imsglobal.org/spec/lti/; Blackboard Learn also sends the draft names under
// lti-ap/ and lti-aip/, which are read as aliases (docs/asset-processor.md).

// Message types of Asset Processor and the EULA service (T-TOK-18).
const (
	MessageAssetProcessorSettings = "LtiAssetProcessorSettingsRequest"
	MessageReportReview           = "LtiReportReviewRequest"
	MessageEula                   = "LtiEulaRequest"
)

// Claim names of Asset Processor and the EULA service.
const (
	ClaimActivity        = "https://purl.imsglobal.org/spec/lti/claim/activity"
	ClaimSubmission      = "https://purl.imsglobal.org/spec/lti/claim/submission"
	ClaimAsset           = "https://purl.imsglobal.org/spec/lti/claim/asset"
	ClaimAssetReportType = "https://purl.imsglobal.org/spec/lti/claim/assetreport_type"
	ClaimAssetService    = "https://purl.imsglobal.org/spec/lti/claim/assetservice"
	ClaimAssetReport     = "https://purl.imsglobal.org/spec/lti/claim/assetreport"
	ClaimEulaService     = "https://purl.imsglobal.org/spec/lti/claim/eulaservice"
)

// Scopes of the Asset, Asset Report and EULA services.
const (
	ScopeAssetReadOnly  = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"
	ScopeReport         = "https://purl.imsglobal.org/spec/lti/scope/report"
	ScopeEulaUser       = "https://purl.imsglobal.org/spec/lti/scope/eula/user"
	ScopeEulaDeployment = "https://purl.imsglobal.org/spec/lti/scope/eula/deployment"
)

// claimAliases are draft claim names some platforms still send, by the 1EdTech name they
// stand for.
var claimAliases = map[string]string{
	"https://purl.imsglobal.org/spec/lti-ap/claim/assetservice":  ClaimAssetService,
	"https://purl.imsglobal.org/spec/lti-ap/claim/assetreport":   ClaimAssetReport,
	"https://purl.imsglobal.org/spec/lti-aip/claim/assetservice": ClaimAssetService,
	"https://purl.imsglobal.org/spec/lti-aip/claim/assetreport":  ClaimAssetReport,
	"https://purl.imsglobal.org/spec/lti-aip/claim/activity":     ClaimActivity,
	"https://purl.imsglobal.org/spec/lti-aip/claim/submission":   ClaimSubmission,
}

// IsAssetProcessorMessage reports whether mt is one of the Asset Processor or EULA
// message types.
func IsAssetProcessorMessage(mt string) bool {
	switch mt {
	case MessageAssetProcessorSettings, MessageReportReview, MessageEula:
		return true
	}
	return false
}

// Activity is the activity claim: the assignment an asset processor is attached to.
type Activity struct{ ID, Title string }

// Submission is the submission claim. Blackboard names the id submission_id.
type Submission struct{ ID string }

// AssetRef is the asset claim of a report review: the asset the report is about.
type AssetRef struct{ ID string }

// Asset is one element of assetservice.assets. URL is where the Asset Service serves it.
type Asset struct {
	ID, URL, Title, Filename, ContentType, Timestamp string
	// SHA256Checksum is sha256_checksum (base64); Checksum is Blackboard's checksum.
	SHA256Checksum, Checksum string
	Size                     int64 // 0 when absent
}

// AssetService is the assetservice claim.
type AssetService struct {
	Scope  []string
	Assets []Asset
}

// AssetReport is the assetreport claim: where reports are posted.
type AssetReport struct {
	Scope     []string
	ReportURL string
}

// EulaService is the eulaservice claim: the base URL of the EULA services (+/user,
// +/deployment).
type EulaService struct {
	Scope []string
	URL   string
}

// AssetProcessor holds the Asset Processor and EULA claims of a message or notice; nil
// members are absent claims.
type AssetProcessor struct {
	Activity     *Activity
	Submission   *Submission
	Asset        *AssetRef
	ReportType   string // assetreport_type
	AssetService *AssetService
	AssetReport  *AssetReport
	EulaService  *EulaService

	bad apBits // required members present with an unusable JSON type
}

// Empty reports whether none of the claims was sent.
func (a *AssetProcessor) Empty() bool {
	return a.Activity == nil && a.Submission == nil && a.Asset == nil && a.ReportType == "" &&
		a.AssetService == nil && a.AssetReport == nil && a.EulaService == nil
}

type apBits uint16

const (
	apBadActivity apBits = 1 << iota // not an object, or id not a string
	apBadSubmission
	apBadAsset
	apBadReportType
	apBadAssetService
	apBadAssetReport
	apBadEulaService
)

func init() {
	for name, f := range assetProcessorFields() {
		claimFields[name] = f
	}
	for alias, name := range claimAliases {
		claimFields[alias] = claimFields[name]
	}
}

// assetProcessorFields are the entries of claimFields for the Asset Processor claims.
func assetProcessorFields() map[string]claimField {
	ap := func(c *Claims) *AssetProcessor { return &c.AssetProcessor }
	return map[string]claimField{
		ClaimActivity: {
			decode: func(c *Claims, val string) {
				a := &Activity{}
				ok := eachMember(val, func(k, v string) {
					switch k {
					case "id":
						a.ID = optString(v)
					case "title":
						a.Title = optString(v)
					}
				})
				ap(c).Activity = keepIf(a, ok)
				ap(c).flag(apBadActivity, !ok)
			},
			reset: func(c *Claims) { ap(c).Activity = nil; ap(c).flag(apBadActivity, false) }},
		ClaimSubmission: {
			decode: func(c *Claims, val string) {
				s := &Submission{}
				ok := eachMember(val, func(k, v string) {
					if k == "id" || (k == "submission_id" && s.ID == "") {
						s.ID = optString(v)
					}
				})
				ap(c).Submission = keepIf(s, ok)
				ap(c).flag(apBadSubmission, !ok)
			},
			reset: func(c *Claims) { ap(c).Submission = nil; ap(c).flag(apBadSubmission, false) }},
		ClaimAsset: {
			decode: func(c *Claims, val string) {
				a := &AssetRef{}
				ok := eachMember(val, func(k, v string) {
					if k == "id" {
						a.ID = optString(v)
					}
				})
				ap(c).Asset = keepIf(a, ok)
				ap(c).flag(apBadAsset, !ok)
			},
			reset: func(c *Claims) { ap(c).Asset = nil; ap(c).flag(apBadAsset, false) }},
		ClaimAssetReportType: {
			decode: func(c *Claims, val string) {
				s, ok := asString(val)
				ap(c).ReportType = s
				ap(c).flag(apBadReportType, !ok)
			},
			reset: func(c *Claims) { ap(c).ReportType = ""; ap(c).flag(apBadReportType, false) }},
		ClaimAssetService: {
			decode: func(c *Claims, val string) {
				s := &AssetService{}
				ok := eachMember(val, func(k, v string) {
					switch k {
					case "scope":
						s.Scope = scopeList(v)
					case "assets":
						s.Assets = decodeAssets(v)
					}
				})
				ap(c).AssetService = keepIf(s, ok)
				ap(c).flag(apBadAssetService, !ok)
			},
			reset: func(c *Claims) { ap(c).AssetService = nil; ap(c).flag(apBadAssetService, false) }},
		ClaimAssetReport: {
			decode: func(c *Claims, val string) {
				r := &AssetReport{}
				ok := eachMember(val, func(k, v string) {
					switch k {
					case "scope":
						r.Scope = scopeList(v)
					case "report_url":
						r.ReportURL = optString(v)
					}
				})
				ap(c).AssetReport = keepIf(r, ok)
				ap(c).flag(apBadAssetReport, !ok)
			},
			reset: func(c *Claims) { ap(c).AssetReport = nil; ap(c).flag(apBadAssetReport, false) }},
		ClaimEulaService: {
			decode: func(c *Claims, val string) {
				e := &EulaService{}
				ok := eachMember(val, func(k, v string) {
					switch k {
					case "scope":
						e.Scope = scopeList(v)
					case "url":
						e.URL = optString(v)
					}
				})
				ap(c).EulaService = keepIf(e, ok)
				ap(c).flag(apBadEulaService, !ok)
			},
			reset: func(c *Claims) { ap(c).EulaService = nil; ap(c).flag(apBadEulaService, false) }},
	}
}

func keepIf[T any](v *T, ok bool) *T {
	if ok {
		return v
	}
	return nil
}

func (a *AssetProcessor) flag(b apBits, set bool) {
	if set {
		a.bad |= b
	} else {
		a.bad &^= b
	}
}

// scopeList reads a scope member: an array of strings, or one space-separated string.
func scopeList(v string) []string {
	if kindOf(v) == kindString {
		return splitSpaces(decodeString(v))
	}
	list, _ := stringList(v, false)
	return list
}

func decodeAssets(v string) []Asset {
	if kindOf(v) != kindArray {
		return nil
	}
	out := make([]Asset, 0, 2)
	for it := newArrayIter(v); ; {
		el, ok := it.next()
		if !ok {
			return out
		}
		var a Asset
		if !eachMember(el, func(k, v string) {
			switch k {
			case "asset_id":
				a.ID = optString(v)
			case "url":
				a.URL = optString(v)
			case "title":
				a.Title = optString(v)
			case "filename":
				a.Filename = optString(v)
			case "content_type":
				a.ContentType = optString(v)
			case "timestamp":
				a.Timestamp = optString(v)
			case "sha256_checksum":
				a.SHA256Checksum = optString(v)
			case "checksum":
				a.Checksum = optString(v)
			case "size":
				if n, ok := asInt(v); ok && n >= 0 {
					a.Size = int64(n)
				}
			}
		}) {
			continue // not an object: skipped (T-QUIRK-04)
		}
		out = append(out, a)
	}
}

// HasScope reports whether scopes holds want, or the same scope under a draft namespace
// (…/lti-ap/scope/asset.readonly for …/lti/scope/asset.readonly), and returns the
// spelling the platform used: the one to ask its token endpoint for.
func HasScope(scopes []string, want string) (string, bool) {
	suffix := want[len("https://purl.imsglobal.org/spec/lti/scope/"):]
	for _, s := range scopes {
		if s == want {
			return s, true
		}
	}
	for _, s := range scopes {
		for _, ns := range []string{"https://purl.imsglobal.org/spec/lti-ap/scope/", "https://purl.imsglobal.org/spec/lti-aip/scope/"} {
			if s == ns+suffix {
				return s, true
			}
		}
	}
	return "", false
}
