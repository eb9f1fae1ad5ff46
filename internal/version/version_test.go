package version

import (
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

func TestCommitFallsBackToSomething(t *testing.T) {
	defer restore(Version, Commit)()
	Commit = ""
	if c := Get().Commit; c == "" || strings.ContainsAny(c, " \n") {
		t.Fatalf("commit without injection = %q, want the VCS revision or \"unknown\"", c)
	}
}

func restore(v, c string) func() { return func() { Version, Commit = v, c } }
