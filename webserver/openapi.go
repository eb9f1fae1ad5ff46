package webserver

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/httpapi"
)

// APIVersion is the version of the HTTP API the OpenAPI document describes (the
// interface contract); the build that serves it follows as SemVer build metadata.
const APIVersion = "2.0"

//go:embed openapi.json
var openAPISource []byte

// openAPIDocument is the document as served: info.version is "2.0+<version>.<commit>",
// the API version and, as build metadata (which SemVer says does not change what is
// compatible), the build that serves it.
var openAPIDocument = withInfoVersion(openAPISource, APIVersion+"+"+version.SemverBuildMetadata())

// withInfoVersion replaces the checked-in info.version (APIVersion) with v, in place, so
// the document keeps its layout.
func withInfoVersion(doc []byte, v string) []byte {
	quoted, _ := json.Marshal(v)
	old := []byte(`"version": "` + APIVersion + `"`)
	if bytes.Count(doc, old) != 1 {
		panic(fmt.Sprintf("openapi.json must hold %s exactly once (as info.version)", old))
	}
	out := bytes.Replace(doc, old, append([]byte(`"version": `), quoted...), 1)
	var check struct {
		Info struct{ Version string } `json:"info"`
	}
	if err := json.Unmarshal(out, &check); err != nil || check.Info.Version != v {
		panic("openapi.json: info.version could not be set")
	}
	return out
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteRawJSON(w, http.StatusOK, openAPIDocument)
}
