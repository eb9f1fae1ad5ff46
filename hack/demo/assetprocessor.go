package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// assetProcessor shows Asset Processor through a launch: a teacher's report review launch
// of the demo submission, the submitted essay downloaded with GET /api/assets/{assetId}, and
// an updated originality report posted with POST /api/reports, which the LMS simulator
// shows on its reports page. (noticeWork, in notices.go, does the same from a notice.)
func (d *demoLMS) assetProcessor(ctx context.Context) error {
	ltik, err := d.launchWith(ctx, "user=demo-teacher&message=LtiReportReviewRequest")
	if err != nil {
		return fmt.Errorf("report review launch: %w", err)
	}
	essay, contentType, err := d.download(ctx, "LTIK-AUTH-V2 "+d.apiKey+":"+ltik, lmssim.DemoAssetID)
	if err != nil {
		return err
	}
	report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed",
		"priority": 1, "title": "Originality", "result": "12%", "scoreGiven": 12, "scoreMaximum": 100,
		"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.", "comment": "Updated from the teacher's report review launch",
		"visibleToOwner": true}
	posted, err := d.api(ctx, ltik, http.MethodPost, "/api/reports", report, http.StatusCreated)
	if err != nil {
		return err
	}
	fmt.Printf("\nAsset Processor from a launch: a teacher opened the report (LtiReportReviewRequest); with its ltik\nGET /api/assets/%s streamed the submitted essay (%s, %d bytes):\n\n  %s\n",
		lmssim.DemoAssetID, contentType, len(essay), essay)
	fmt.Printf("and POST /api/reports sent this updated report to the LMS (shown at %s):\n\n%s\n", d.base+lmssim.ReportsPagePath, posted)
	return nil
}

// download reads an asset through GET /api/assets/{assetId} (at most 64 KB: the demo's are
// small) and returns it with its content type.
func (d *demoLMS) download(ctx context.Context, authorization, assetID string) ([]byte, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.ltiop+"/api/assets/"+url.PathEscape(assetID), nil)
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
