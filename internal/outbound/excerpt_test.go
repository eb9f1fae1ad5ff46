package outbound

import (
	"strings"
	"testing"
)

func TestErrorExcerpt(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, body, want string
	}{
		{"oauth error", `{"error":"invalid_grant","error_description":"bad assertion","access_token":"leak","internal":"x"}`,
			`{"error":"invalid_grant","error_description":"bad assertion"}`},
		{"message", `{"message":"Not found","stack":"at /srv/app.js:12"}`, `{"message":"Not found"}`},
		{"canvas errors array", `{"errors":[{"message":"Invalid access token."},{"message":"x"}]}`, `{"message":"Invalid access token."}`},
		{"HTML from an internal host", `<html><body>Jenkins admin console 10.0.0.7</body></html>`, ""},
		{"plain text", "root:x:0:0:root:/root:/bin/bash", ""},
		{"JSON without error fields", `{"Code":"Success","AccessKeyId":"ASIA","SecretAccessKey":"s"}`, ""},
		{"non-string fields", `{"error":{"code":5},"message":["a"]}`, ""},
		{"array", `["error"]`, ""},
		{"controls removed, spaces collapsed", "{\"error\":\"bad\\u0000\\u001b[31m  \\n\\t thing\\u202e\"}", `{"error":"bad[31m thing"}`},
		{"HTML in a field is escaped JSON", `{"error":"<script>"}`, `{"error":"\u003cscript\u003e"}`},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorExcerpt([]byte(tt.body)); got != tt.want {
				t.Errorf("ErrorExcerpt = %q, want %q", got, tt.want)
			}
		})
	}

	got := ErrorExcerpt([]byte(`{"error":"` + long + `","error_description":"` + long + `","message":"` + long + `"}`))
	if len(got) > 3*maxExcerptField+60 {
		t.Errorf("excerpt of %d bytes", len(got))
	}
	if !strings.Contains(got, strings.Repeat("é", maxExcerptField/2)) || strings.Contains(got, strings.Repeat("é", maxExcerptField/2+1)) {
		t.Errorf("field not clipped to %d bytes of whole characters: %q", maxExcerptField, got)
	}
	if ErrorExcerpt([]byte(`{"error":"x"}`+strings.Repeat(" ", maxExcerptInput))) != "" {
		t.Error("an oversized body gave an excerpt")
	}
}

func FuzzErrorExcerpt(f *testing.F) {
	f.Add([]byte(`{"error":"invalid_client","error_description":"x"}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := ErrorExcerpt(body)
		if len(got) > 3*6*maxExcerptField+80 {
			t.Fatalf("excerpt of %d bytes", len(got))
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", got)
			}
		}
	})
}

func BenchmarkErrorExcerpt(b *testing.B) {
	body := []byte(`{"error":"invalid_grant","error_description":"The provided authorization grant is invalid, expired or revoked.","trace_id":"0af7651916cd43dd8448eb211c80319c"}`)
	b.ReportAllocs()
	for b.Loop() {
		ErrorExcerpt(body)
	}
}
