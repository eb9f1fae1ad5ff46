package webserver

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ltiop/ltiop/internal/version"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// APIVersion is the version of the HTTP API the OpenAPI document describes (the
// interface contract), served as info.version exactly: clients compare it and code
// generators put it in names, so the build that serves it goes elsewhere (x-build).
const APIVersion = "2.0"

//go:embed openapi.json
var openAPISource []byte

// buildInfo is the info object's x-build extension: the build that serves the document.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// openAPIDocument is the document as served: the checked-in file with info.x-build.
var openAPIDocument = withBuildInfo(openAPISource, buildInfo{Version: version.Version, Commit: version.Get().Commit})

// withBuildInfo adds info.x-build right after the checked-in info.version (APIVersion),
// in place, so the document keeps its layout.
func withBuildInfo(doc []byte, b buildInfo) []byte {
	encoded, _ := json.Marshal(b)
	old := []byte(`"version": "` + APIVersion + `",`)
	if bytes.Count(doc, old) != 1 {
		panic(fmt.Sprintf("openapi.json must hold %s exactly once (as info.version)", old))
	}
	out := bytes.Replace(doc, old, append(append(append(old, "\n    \"x-build\": "...), encoded...), ','), 1)
	var check struct {
		Info struct {
			Version string
			Build   buildInfo `json:"x-build"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &check); err != nil || check.Info.Version != APIVersion || check.Info.Build != b {
		panic("openapi.json: info.x-build could not be set")
	}
	return out
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteRawJSON(w, http.StatusOK, openAPIDocument)
}
