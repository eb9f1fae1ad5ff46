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

// Claim names of Asset Processor and the EULA service. simulators/lmssim keeps its own copy on purpose: it imports no product code.
const (
	ClaimActivity        = "https://purl.imsglobal.org/spec/lti/claim/activity"
	ClaimSubmission      = "https://purl.imsglobal.org/spec/lti/claim/submission"
	ClaimAsset           = "https://purl.imsglobal.org/spec/lti/claim/asset"
	ClaimAssetReportType = "https://purl.imsglobal.org/spec/lti/claim/assetreport_type"
	ClaimAssetService    = "https://purl.imsglobal.org/spec/lti/claim/assetservice"
	ClaimAssetReport     = "https://purl.imsglobal.org/spec/lti/claim/assetreport"
	ClaimEulaService     = "https://purl.imsglobal.org/spec/lti/claim/eulaservice"
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
	return map[string]claimField{
		ClaimActivity: apField(apBadActivity, func(a *AssetProcessor, v *Activity) { a.Activity = v },
			func(sc *scanner, a *Activity) {
				switch sc.Key() {
				case "id":
					a.ID = readOptString(sc)
				case "title":
					a.Title = readOptString(sc)
				}
			}),
		ClaimSubmission: apField(apBadSubmission, func(a *AssetProcessor, v *Submission) { a.Submission = v },
			func(sc *scanner, s *Submission) {
				if k := sc.Key(); k == "id" || (k == "submission_id" && s.ID == "") {
					s.ID = readOptString(sc)
				}
			}),
		ClaimAsset: apField(apBadAsset, func(a *AssetProcessor, v *AssetRef) { a.Asset = v },
			func(sc *scanner, a *AssetRef) {
				if sc.Key() == "id" {
					a.ID = readOptString(sc)
				}
			}),
		ClaimAssetReportType: {
			decode: func(c *Claims, sc *scanner) {
				s, ok := readString(sc)
				c.AssetProcessor.ReportType = s
				c.AssetProcessor.flag(apBadReportType, !ok)
			},
			reset: func(c *Claims) { c.AssetProcessor.ReportType = ""; c.AssetProcessor.flag(apBadReportType, false) }},
		ClaimAssetService: apField(apBadAssetService, func(a *AssetProcessor, v *AssetService) { a.AssetService = v },
			func(sc *scanner, s *AssetService) {
				switch sc.Key() {
				case "scope":
					s.Scope = readScope(sc)
				case "assets":
					s.Assets = decodeAssets(sc)
				}
			}),
		ClaimAssetReport: apField(apBadAssetReport, func(a *AssetProcessor, v *AssetReport) { a.AssetReport = v },
			func(sc *scanner, r *AssetReport) {
				switch sc.Key() {
				case "scope":
					r.Scope = readScope(sc)
				case "report_url":
					r.ReportURL = readOptString(sc)
				}
			}),
		ClaimEulaService: apField(apBadEulaService, func(a *AssetProcessor, v *EulaService) { a.EulaService = v },
			func(sc *scanner, e *EulaService) {
				switch sc.Key() {
				case "scope":
					e.Scope = readScope(sc)
				case "url":
					e.URL = readOptString(sc)
				}
			}),
	}
}

// apField is the entry of an Asset Processor claim that must be an object (bit set
// otherwise): member reads the member the scanner stands at into v, set stores v (nil
// when absent or not an object).
func apField[T any](bit apBits, set func(a *AssetProcessor, v *T), member func(sc *scanner, v *T)) claimField {
	return claimField{
		decode: func(c *Claims, sc *scanner) {
			ap := &c.AssetProcessor
			set(ap, nil)
			ok := enterObject(sc)
			ap.flag(bit, !ok)
			if !ok {
				return
			}
			v := new(T)
			for sc.NextMember() {
				member(sc, v)
			}
			set(ap, v)
		},
		reset: func(c *Claims) { set(&c.AssetProcessor, nil); c.AssetProcessor.flag(bit, false) }}
}

func (a *AssetProcessor) flag(b apBits, set bool) {
	if set {
		a.bad |= b
	} else {
		a.bad &^= b
	}
}

func decodeAssets(sc *scanner) []Asset {
	if !enterArray(sc) {
		return nil
	}
	out := make([]Asset, 0, 2)
	for sc.NextElement() {
		if !enterObject(sc) {
			continue // not an object: skipped (T-QUIRK-04)
		}
		var a Asset
		for sc.NextMember() {
			switch sc.Key() {
			case "asset_id":
				a.ID = readOptString(sc)
			case "url":
				a.URL = readOptString(sc)
			case "title":
				a.Title = readOptString(sc)
			case "filename":
				a.Filename = readOptString(sc)
			case "content_type":
				a.ContentType = readOptString(sc)
			case "timestamp":
				a.Timestamp = readOptString(sc)
			case "sha256_checksum":
				a.SHA256Checksum = readOptString(sc)
			case "checksum":
				a.Checksum = readOptString(sc)
			case "size":
				if n, ok := readInt(sc); ok && n >= 0 {
					a.Size = int64(n)
				}
			}
		}
		out = append(out, a)
	}
	return out
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
