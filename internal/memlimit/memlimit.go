// Package memlimit gives the Go runtime a soft memory limit below the container's: without
// one the heap may grow to twice what it keeps alive (GOGC=100) before a collection, so a
// replica that needs 285 MiB can sit at 350 MiB after some traffic, and be killed at its
// limit when it need not be.
package memlimit

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory limit given to the Go runtime: the rest is
// for what the runtime does not count (thread stacks outside the heap, the binary's pages).
const Ratio = 0.9

// CgroupRoot is where the cgroup file system is mounted in a container.
const CgroupRoot = "/sys/fs/cgroup"

// The files holding the memory limit: cgroup v2, then v1.
var limitFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// unlimitedV1 is at or above what cgroup v1 reports for "no limit" (the largest multiple of
// the page size that fits in an int64).
const unlimitedV1 = math.MaxInt64 &^ (1<<20 - 1)

// Apply sets the runtime's soft memory limit to Ratio of the container's memory limit read
// under root, unless GOMEMLIMIT is set (the runtime has applied it; GOMEMLIMIT=off turns the
// limit off). It returns the limit set and where it came from, or 0 and "" when it set
// none: GOMEMLIMIT given, or no limit to read (not in a container, or none configured).
func Apply(getenv func(string) string, root string) (limit int64, source string, err error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, "", nil
	}
	for _, name := range limitFiles {
		path := filepath.Join(root, name)
		b, err := os.ReadFile(path) //nolint:gosec // G304: a fixed cgroup file under root, not input
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, "", nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", errors.New("memlimit: " + path + " holds " + strconv.Quote(s) + ", not a number of bytes")
		}
		if n >= unlimitedV1 {
			return 0, "", nil
		}
		limit = int64(float64(n) * Ratio)
		debug.SetMemoryLimit(limit)
		return limit, path, nil
	}
	return 0, "", nil
}
