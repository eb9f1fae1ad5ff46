package webserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/version"
)

// The served document says the API version and, as build metadata, the build; the
// licence is Apache-2.0; only info.version differs from the checked-in file.
func TestOpenAPIInfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(serveOpenAPI))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var doc struct {
		Info struct {
			Version string
			License struct{ Name, Identifier string }
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if want := "2.0+" + version.SemverBuildMetadata(); doc.Info.Version != want {
		t.Errorf("info.version = %q, want %q", doc.Info.Version, want)
	}
	if doc.Info.License.Identifier != "Apache-2.0" || doc.Info.License.Name == "" {
		t.Errorf("info.license = %+v", doc.Info.License)
	}
	if got := bytes.Replace(body, []byte(`"version": "`+doc.Info.Version+`"`), []byte(`"version": "2.0"`), 1); !bytes.Equal(got, openAPISource) {
		t.Error("the served document differs from openapi.json beyond info.version")
	}
}

// Whatever the injected version, info.version stays a valid JSON string.
func TestOpenAPIInfoVersionOfAnyBuild(t *testing.T) {
	for _, v := range []string{"2.0+v1.2.3.0123abcd", `2.0+dev"quoted\`, "2.0+unknown"} {
		out := withInfoVersion(openAPISource, v)
		var doc struct{ Info struct{ Version string } }
		if err := json.Unmarshal(out, &doc); err != nil || doc.Info.Version != v {
			t.Errorf("%q: %v, info.version %q", v, err, doc.Info.Version)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "exactly once") {
			t.Errorf("a document without the expected info.version: recover() = %v", r)
		}
	}()
	withInfoVersion([]byte(`{"info":{"version":"1.0"}}`), "x")
}
