package main

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report collects the figures and prints them as a table.
type report struct {
	header string
	rows   *[][3]string
	prefix string
}

func newReport(o options) *report {
	host, _ := os.Hostname()
	return &report{
		header: fmt.Sprintf("ltiop scale run: %d registrations, %d parallel POSTs, %s, %d CPUs (%s), %s",
			o.n, o.parallel, runtime.GOARCH, runtime.NumCPU(), host, time.Now().UTC().Format(time.RFC3339)),
		rows: &[][3]string{},
	}
}

// prefixed is the same report with section names prefixed.
func (r *report) prefixed(p string) *report {
	return &report{header: r.header, rows: r.rows, prefix: p + ": "}
}

func (r *report) add(section, what, value string) {
	*r.rows = append(*r.rows, [3]string{r.prefix + section, what, value})
	say("%s%s | %s | %s", r.prefix, section, what, value)
}

// requests adds the API-server requests of a phase and the watch traffic, in total and
// per 1,000 registrations.
func (r *report) requests(section string, c requestCounts, n int) {
	keys := slices.Sorted(maps.Keys(c))
	var total, events, sent float64
	var parts, eventParts []string
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, watchEvents):
			events += c[k]
			eventParts = append(eventParts, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, watchEvents), c[k]))
		case strings.HasPrefix(k, watchBytes):
			sent += c[k]
		default:
			total += c[k]
			parts = append(parts, fmt.Sprintf("%s %.0f", k, c[k]))
		}
	}
	r.add(section, "API-server requests by ltiop (watches count when they end)", fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", ")))
	r.add(section, "API-server requests per 1,000 registrations", perThousand(int(total), n))
	r.add(section, "watch events sent (all watchers)", fmt.Sprintf("%.0f (%s), %s", events, strings.Join(eventParts, ", "), kib(int(sent))))
	r.add(section, "watch bytes sent per 1,000 registrations", kib(int(sent*1000/float64(max(n, 1)))))
}

func (r *report) write(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n| phase | measure | value |\n|---|---|---|\n", r.header)
	for _, row := range *r.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	fmt.Print("\n" + b.String())
	say("report written to %s", path)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func kib(b int) string   { return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10)) }

func perThousand(v, n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", float64(v)*1000/float64(n))
}
