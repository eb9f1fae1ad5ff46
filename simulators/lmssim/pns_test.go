package lmssim_test

import (
	"testing"
	"time"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// A submission notice names the simulator's own submission: every asset URL it carries is
// served by the Asset Service, and its report URL takes a report of that asset, so a tool
// holding only the notice can do its work.
func TestSubmissionNoticeNamesServedAssetsAndReportService(t *testing.T) {
	r := newRig(t, func(l *lmssim.LMS) { l.EnablePNS(nil) })
	r.lms.AddAsset(lmssim.Asset{ID: "appendix", Filename: "appendix.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.7")})
	c := r.lms.NoticeClaims(lmssim.NoticeAssetProcessorSubmission)
	if c[lmssim.ClaimNotice].(map[string]any)["type"] != lmssim.NoticeAssetProcessorSubmission {
		t.Fatalf("notice claim %v", c[lmssim.ClaimNotice])
	}
	for _, claim := range []string{lmssim.ClaimActivity, lmssim.ClaimSubmission, lmssim.ClaimForUser} {
		if c[claim] == nil {
			t.Errorf("no %s claim", claim)
		}
	}
	token := r.token(t, lmssim.ScopeAssetReadOnly, lmssim.ScopeReport)

	assets := c[lmssim.ClaimAssetService].(map[string]any)["assets"].([]any)
	var ids []string
	for _, a := range assets {
		a := a.(map[string]any)
		ids = append(ids, a["asset_id"].(string))
		res := call(t, "GET", a["url"].(string), token, nil, "")
		if res.Status != 200 || res.Header.Get("Content-Type") != a["content_type"] {
			t.Errorf("asset %v: HTTP %d %s", a["asset_id"], res.Status, res.Header.Get("Content-Type"))
		}
	}
	if len(ids) != 2 || ids[0] != lmssim.DemoAssetID || ids[1] != "appendix" {
		t.Fatalf("assets %v, want the demo essay and the added appendix", ids)
	}
	if n := r.lms.AssetDownloads(); n != 2 {
		t.Fatalf("%d downloads", n)
	}

	reportURL := c[lmssim.ClaimAssetReport].(map[string]any)["report_url"].(string)
	res := call(t, "POST", reportURL, token, map[string]string{"Content-Type": "application/json"},
		`{"assetId":"`+lmssim.DemoAssetID+`","type":"originality","processingProgress":"Processed","priority":1,"timestamp":"`+
			time.Now().UTC().Format(time.RFC3339)+`"}`)
	if res.Status != 201 || len(r.lms.Reports()) != 1 {
		t.Fatalf("report: HTTP %d %s; %d recorded", res.Status, res.Body, len(r.lms.Reports()))
	}
}
