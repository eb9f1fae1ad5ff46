package version

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestStringNamesVersionCommitAndGo(t *testing.T) {
	defer restore(Version, Commit)()
	Version, Commit = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	got := Get().String()
	want := "ltiop v1.2.3 (commit 0123456789abcdef0123456789abcdef01234567, " + runtime.Version() + ")"
	if got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if ua := UserAgent(); ua != "ltiop/v1.2.3" {
		t.Errorf("UserAgent() = %q", ua)
	}
}

func TestSemverBuildMetadataIsValidWhateverTheVersion(t *testing.T) {
	defer restore(Version, Commit)()
	identifiers := regexp.MustCompile(`^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$`)
	for _, tc := range []struct{ version, commit, want string }{
		{"v1.2.3", "0123456789abcdef0123", "v1.2.3.0123456789ab"},
		{"v1.2.3-4-gabc-dirty", "abc", "v1.2.3-4-gabc-dirty.abc"},
		{"weird/ver sion+x", "c0ffee", "weird-ver-sion-x.c0ffee"},
		{"..1..", "x", "1.x"},
	} {
		Version, Commit = tc.version, tc.commit
		got := SemverBuildMetadata()
		if got != tc.want {
			t.Errorf("version %q commit %q: %q, want %q", tc.version, tc.commit, got, tc.want)
		}
		if !identifiers.MatchString(got) {
			t.Errorf("%q is not SemVer build metadata", got)
		}
	}
}

func TestCommitFallsBackToSomething(t *testing.T) {
	defer restore(Version, Commit)()
	Commit = ""
	if c := Get().Commit; c == "" || strings.ContainsAny(c, " \n") {
		t.Fatalf("commit without injection = %q, want the VCS revision or \"unknown\"", c)
	}
}

func restore(v, c string) func() { return func() { Version, Commit = v, c } }
