package webserver

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ltiop/ltiop/internal/version"
)

// The served document's info.version is the API version, exactly "2.0" (issue #25: a
// client comparing versions broke on "2.0+dev.unknown"); the build is in info.x-build;
// the licence is Apache-2.0; only info.x-build differs from the checked-in file.
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
			Build   map[string]string `json:"x-build"`
			License struct{ Name, Identifier string }
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != "2.0" {
		t.Errorf("info.version = %q, want 2.0", doc.Info.Version)
	}
	if want := map[string]string{"version": version.Version, "commit": version.Get().Commit}; !maps.Equal(doc.Info.Build, want) {
		t.Errorf("info.x-build = %v, want %v", doc.Info.Build, want)
	}
	if doc.Info.License.Identifier != "Apache-2.0" || doc.Info.License.Name == "" {
		t.Errorf("info.license = %+v", doc.Info.License)
	}
	build, _ := json.Marshal(buildInfo{Version: version.Version, Commit: version.Get().Commit})
	if got := bytes.Replace(body, []byte("\n    \"x-build\": "+string(build)+","), nil, 1); !bytes.Equal(got, openAPISource) {
		t.Error("the served document differs from openapi.json beyond info.x-build")
	}
}

// Whatever the injected build, the document stays valid JSON with info.version "2.0".
func TestOpenAPIInfoBuildOfAnyBuild(t *testing.T) {
	for _, b := range []buildInfo{{"v1.2.3", "0123abcd"}, {`dev"quoted\`, "unknown"}, {"", ""}} {
		out := withBuildInfo(openAPISource, b)
		var doc struct {
			Info struct {
				Version string
				Build   buildInfo `json:"x-build"`
			}
		}
		if err := json.Unmarshal(out, &doc); err != nil || doc.Info.Version != "2.0" || doc.Info.Build != b {
			t.Errorf("%+v: %v, info %+v", b, err, doc.Info)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "exactly once") {
			t.Errorf("a document without the expected info.version: recover() = %v", r)
		}
	}()
	withBuildInfo([]byte(`{"info":{"version":"1.0"}}`), buildInfo{})
}
