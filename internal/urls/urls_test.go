package urls_test

import (
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/urls"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		raw       string
		allowHTTP bool
		wantErr   string // "" means accepted
	}{
		{raw: "https://lti.example.com", wantErr: ""},
		{raw: "https://lti.example.com/launch?x=1", wantErr: ""},
		{raw: "https://lti.example.com", allowHTTP: true, wantErr: ""},
		{raw: "HTTPS://lti.example.com", wantErr: ""},
		{raw: "http://localhost:3000", allowHTTP: true, wantErr: ""},
		{raw: "http://localhost:3000", wantErr: "must use https"},
		{raw: "ftp://files.example.com", wantErr: "absolute https URL"},
		{raw: "ftp://files.example.com", allowHTTP: true, wantErr: "absolute https URL"},
		{raw: "/launch", wantErr: "absolute https URL"},
		{raw: "lti.example.com/launch", wantErr: "absolute https URL"},
		{raw: "//lti.example.com/launch", wantErr: "absolute https URL"},
		{raw: "", wantErr: "absolute https URL"},
		{raw: "https://user:pass@lti.example.com", wantErr: "no user information"},
		{raw: "https://user@lti.example.com", wantErr: "no user information"},
		{raw: "http://user@localhost", allowHTTP: true, wantErr: "no user information"},
		{raw: "https://", wantErr: "must have a host"},
		{raw: "https:///path", wantErr: "must have a host"},
		{raw: "https:opaque", wantErr: "must have a host"},
		{raw: "https://lti.example.com/%zz", wantErr: "not a URL"},
		{raw: "javascript:alert(1)", wantErr: "absolute https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			err := urls.Check(tt.raw, tt.allowHTTP)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check(%q, %v) = %v, want accepted", tt.raw, tt.allowHTTP, err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("Check(%q, %v) accepted, want error mentioning %q", tt.raw, tt.allowHTTP, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("Check(%q, %v) = %q, want it to mention %q", tt.raw, tt.allowHTTP, err, tt.wantErr)
			}
		})
	}
}
