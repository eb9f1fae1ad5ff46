// Package version holds ltiop's version, set at build time with
// -ldflags "-X github.com/ltiop/ltiop/internal/version.Version=v1.2.3".
package version

// Version is the released version, or "dev".
var Version = "dev"

// UserAgent is sent on every outbound HTTP request (Canvas requires one).
func UserAgent() string { return "ltiop/" + Version }
