// Package version holds ltiop's version and commit, set at build time by the Makefile and
// the Dockerfile:
//
//	-ldflags "-X github.com/ltiop/ltiop/internal/version.Version=v1.2.3
//	          -X github.com/ltiop/ltiop/internal/version.Commit=<git sha>"
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the released version (a git tag, or git describe output), or "dev".
var Version = "dev"

// Commit is the git commit the binary was built from, or "unknown".
var Commit = "unknown"

// commit is Commit, or, when the build injected none, the revision the Go toolchain
// stamped (go build with VCS stamping on).
func commit() string {
	if Commit != "" && Commit != "unknown" {
		return Commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// Info is what a build says about itself.
type Info struct {
	Version, Commit, GoVersion string
}

// Get returns this binary's build information.
func Get() Info {
	return Info{Version: Version, Commit: commit(), GoVersion: runtime.Version()}
}

// String is the --version line: "ltiop v1.2.3 (commit 0123abc…, go1.26.0)".
func (i Info) String() string {
	return "ltiop " + i.Version + " (commit " + i.Commit + ", " + i.GoVersion + ")"
}

// UserAgent is sent on every outbound HTTP request (Canvas requires one).
func UserAgent() string { return "ltiop/" + Version }
