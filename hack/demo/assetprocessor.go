package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// assetProcessor shows Asset Processor through ltiop: a report review launch of the demo
// submission, the submitted essay downloaded with GET /api/assets/{assetId}, and an
// originality report posted with POST /api/reports, which the LMS simulator shows on its
// reports page.
func (d *demoLMS) assetProcessor(ctx context.Context) error {
	ltik, err := d.launchWith(ctx, "user=demo-teacher&message=LtiReportReviewRequest")
	if err != nil {
		return fmt.Errorf("report review launch: %w", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.ltiop+"/api/assets/"+lmssim.DemoAssetID, nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+d.apiKey+":"+ltik)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	essay, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/assets/%s: HTTP %d: %s", lmssim.DemoAssetID, res.StatusCode, essay)
	}
	report := map[string]any{"assetId": lmssim.DemoAssetID, "type": "originality", "processingProgress": "Processed",
		"priority": 1, "title": "Originality", "result": "12%", "scoreGiven": 12, "scoreMaximum": 100,
		"indicationColor": "#2E7D32", "indicationAlt": "Little matched text.", "comment": "Posted by the ltiop demo",
		"visibleToOwner": true}
	posted, err := d.api(ctx, ltik, http.MethodPost, "/api/reports", report, http.StatusCreated)
	if err != nil {
		return err
	}
	fmt.Printf("\nAsset Processor: an LtiReportReviewRequest launch; GET /api/assets/%s streamed the submitted essay (%s, %d bytes):\n\n  %s\n",
		lmssim.DemoAssetID, res.Header.Get("Content-Type"), len(essay), essay)
	fmt.Printf("POST /api/reports sent this report to the LMS (shown at %s):\n\n%s\n", d.base+lmssim.ReportsPagePath, posted)
	return nil
}
