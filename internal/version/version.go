// Package version holds ltiop's version and commit, set at build time by the Makefile and
// the Dockerfile:
//
//	-ldflags "-X github.com/ltiop/ltiop/internal/version.Version=v1.2.3
//	          -X github.com/ltiop/ltiop/internal/version.Commit=<git sha>"
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
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

// SemverBuildMetadata is the version and commit as SemVer build metadata (dot-separated,
// non-empty identifiers of [0-9A-Za-z-]), to follow an API version: "2.0+v1.2.3.0123abcd4567".
// Any other character becomes "-".
func SemverBuildMetadata() string {
	i := Get()
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	var ids []string
	for _, id := range strings.Split(i.Version+"."+c, ".") {
		if id == "" {
			continue
		}
		ids = append(ids, strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
				return r
			}
			return '-'
		}, id))
	}
	return strings.Join(ids, ".")
}
