package lti

import "github.com/ltiop/ltiop/api/ltiwire"

// IDTokenAssetProcessor is idtoken.assetProcessor: the Asset Processor and EULA claims of
// the launch, simplified. Present only when the platform sent one of them.
type IDTokenAssetProcessor struct {
	Activity   *IDTokenActivity `json:"activity,omitempty"`
	Submission *IDTokenID       `json:"submission,omitempty"`
	// Assets are the submission's assets; download one with GET /api/assets/{assetId}.
	Assets []IDTokenAsset `json:"assets,omitempty"`
	// Report is what a report review launch is about: the asset and the report type.
	Report   *IDTokenReportRef           `json:"report,omitempty"`
	Services IDTokenAssetProcessorServes `json:"services"`
}

// IDTokenActivity is the assignment an asset processor is attached to.
type IDTokenActivity struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
}

// IDTokenID is an object known by its id.
type IDTokenID struct {
	ID string `json:"id"`
}

// IDTokenAsset is one submitted asset. Its URL is not shown: ltiop downloads it.
type IDTokenAsset struct {
	ID             string `json:"id"`
	Title          string `json:"title,omitempty"`
	Filename       string `json:"filename,omitempty"`
	ContentType    string `json:"contentType,omitempty"`
	Size           int64  `json:"size,omitempty"`
	SHA256Checksum string `json:"sha256Checksum,omitempty"`
	Checksum       string `json:"checksum,omitempty"`
	Timestamp      string `json:"timestamp,omitempty"`
}

// IDTokenReportRef is idtoken.assetProcessor.report.
type IDTokenReportRef struct {
	AssetID string `json:"assetId,omitempty"`
	Type    string `json:"type,omitempty"`
}

// IDTokenAssetProcessorServes says which Asset Processor and EULA services this launch
// opens, with the scopes the platform granted.
type IDTokenAssetProcessorServes struct {
	AssetService IDTokenScopedService `json:"assetService"`
	AssetReport  IDTokenScopedService `json:"assetReport"`
	Eula         IDTokenScopedService `json:"eula"`
}

// IDTokenScopedService is a service's availability and granted scopes.
type IDTokenScopedService struct {
	Available bool     `json:"available"`
	Scopes    []string `json:"scopes,omitzero"`
}

func assetProcessorToken(a *AssetProcessor) *IDTokenAssetProcessor {
	if a.Empty() {
		return nil
	}
	t := &IDTokenAssetProcessor{}
	if a.Activity != nil && a.Activity.ID != "" {
		t.Activity = &IDTokenActivity{ID: a.Activity.ID, Title: a.Activity.Title}
	}
	if a.Submission != nil && a.Submission.ID != "" {
		t.Submission = &IDTokenID{ID: a.Submission.ID}
	}
	if s := a.AssetService; s != nil {
		for _, as := range s.Assets {
			if as.ID == "" {
				continue
			}
			t.Assets = append(t.Assets, IDTokenAsset{ID: as.ID, Title: as.Title, Filename: as.Filename,
				ContentType: as.ContentType, Size: as.Size, SHA256Checksum: as.SHA256Checksum,
				Checksum: as.Checksum, Timestamp: as.Timestamp})
		}
		_, ok := HasScope(s.Scope, ltiwire.ScopeAssetReadOnly)
		t.Services.AssetService = IDTokenScopedService{Available: ok && len(t.Assets) > 0, Scopes: nonNil(s.Scope)}
	}
	if (a.Asset != nil && a.Asset.ID != "") || a.ReportType != "" {
		t.Report = &IDTokenReportRef{Type: a.ReportType}
		if a.Asset != nil {
			t.Report.AssetID = a.Asset.ID
		}
	}
	if r := a.AssetReport; r != nil {
		_, ok := HasScope(r.Scope, ltiwire.ScopeReport)
		t.Services.AssetReport = IDTokenScopedService{Available: ok && r.ReportURL != "", Scopes: nonNil(r.Scope)}
	}
	if e := a.EulaService; e != nil {
		_, user := HasScope(e.Scope, ltiwire.ScopeEulaUser)
		_, dep := HasScope(e.Scope, ltiwire.ScopeEulaDeployment)
		t.Services.Eula = IDTokenScopedService{Available: (user || dep) && e.URL != "", Scopes: nonNil(e.Scope)}
	}
	return t
}
