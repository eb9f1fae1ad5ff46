package integratorsim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// ReportReview is what AssetProcessor did: the essay it downloaded and the report it posted.
type ReportReview struct {
	Essay       []byte
	ContentType string
	Posted      []byte // ltiop's answer to POST /api/reports, indented
}

// AssetProcessor shows Asset Processor through a launch: a teacher's report review launch
// of the LMS's submission, the submitted essay downloaded with GET /api/assets/{assetId},
// and an updated originality report posted with POST /api/reports, which the LMS
// simulator shows on its reports page. (NoticeWork, in notices.go, does the same from a
// notice.)
func (a *App) AssetProcessor(ctx context.Context) (*ReportReview, error) {
	ltik, err := a.LaunchWith(ctx, "user=demo-teacher&message=LtiReportReviewRequest")
	if err != nil {
		return nil, fmt.Errorf("report review launch: %w", err)
	}
	essay, contentType, err := a.Download(ctx, "LTIK-AUTH-V2 "+a.APIKey+":"+ltik, lmssim.DemoAssetID)
	if err != nil {
		return nil, err
	}
	report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed",
		"priority": 1, "title": "Originality", "result": "12%", "scoreGiven": 12, "scoreMaximum": 100,
		"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.", "comment": "Updated from the teacher's report review launch",
		"visibleToOwner": true}
	posted, err := a.API(ctx, ltik, http.MethodPost, "/api/reports", report, http.StatusCreated)
	if err != nil {
		return nil, err
	}
	return &ReportReview{Essay: essay, ContentType: contentType, Posted: posted}, nil
}

// Download reads an asset through GET /api/assets/{assetId} (at most 64 KB: the
// simulator's are small) and returns it with its content type.
func (a *App) Download(ctx context.Context, authorization, assetID string) ([]byte, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.LTIOP+"/api/assets/"+url.PathEscape(assetID), nil)
	req.Header.Set("Authorization", authorization)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET /api/assets/%s: HTTP %d: %s", assetID, res.StatusCode, body)
	}
	return body, res.Header.Get("Content-Type"), nil
}
