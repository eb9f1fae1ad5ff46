package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"
)

// cgroup writes a cgroup file system under a temporary root: file name -> content.
func cgroup(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func noEnv(string) string { return "" }

// keepLimit restores the runtime's memory limit after a test that sets it.
func keepLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

func TestAppliesNinetyPercentOfTheContainerLimit(t *testing.T) {
	const mib = 1 << 20
	for name, files := range map[string]map[string]string{
		"cgroup v2": {"memory.max": "536870912\n"},
		"cgroup v1": {"memory/memory.limit_in_bytes": "536870912\n"},
	} {
		t.Run(name, func(t *testing.T) {
			keepLimit(t)
			debug.SetMemoryLimit(math.MaxInt64)
			limit, source, err := Apply(noEnv, cgroup(t, files))
			if err != nil || limit != 512*mib*9/10 || source == "" {
				t.Fatalf("Apply = %d, %q, %v; want %d", limit, source, err, 512*mib*9/10)
			}
			if got := debug.SetMemoryLimit(-1); got != limit {
				t.Errorf("the runtime's limit is %d, want %d", got, limit)
			}
		})
	}
}

// No limit to follow, or GOMEMLIMIT chosen by the operator: the runtime's limit is left alone.
func TestLeavesTheLimitAlone(t *testing.T) {
	for name, c := range map[string]struct {
		files map[string]string
		env   string
	}{
		"not in a container": {},
		"v2 without limit":   {files: map[string]string{"memory.max": "max\n"}},
		"v1 without limit":   {files: map[string]string{"memory/memory.limit_in_bytes": strconv.FormatInt(math.MaxInt64&^4095, 10)}},
		"GOMEMLIMIT given":   {files: map[string]string{"memory.max": "536870912"}, env: "400MiB"},
		"GOMEMLIMIT off":     {files: map[string]string{"memory.max": "536870912"}, env: "off"},
	} {
		t.Run(name, func(t *testing.T) {
			keepLimit(t)
			const sentinel = 123 << 20
			debug.SetMemoryLimit(sentinel)
			env := func(k string) string {
				if k == "GOMEMLIMIT" {
					return c.env
				}
				return ""
			}
			limit, source, err := Apply(env, cgroup(t, c.files))
			if err != nil || limit != 0 || source != "" {
				t.Errorf("Apply = %d, %q, %v; want nothing done", limit, source, err)
			}
			if got := debug.SetMemoryLimit(-1); got != sentinel {
				t.Errorf("the runtime's limit changed to %d", got)
			}
		})
	}
}

func TestUnreadableLimitIsAnError(t *testing.T) {
	keepLimit(t)
	const sentinel = 123 << 20
	debug.SetMemoryLimit(sentinel)
	if _, _, err := Apply(noEnv, cgroup(t, map[string]string{"memory.max": "lots"})); err == nil {
		t.Error("a memory.max that is not a number was accepted")
	}
	if got := debug.SetMemoryLimit(-1); got != sentinel {
		t.Errorf("the runtime's limit changed to %d", got)
	}
}
