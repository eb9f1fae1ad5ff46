package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ltiopProcess is the ltiop binary run as a child process, configured by environment.
type ltiopProcess struct {
	binary, listen, kubeconfig, log string
	metrics                         string // the metrics address; "" for none
	pprof                           bool   // serve pprof there
	cmd                             *exec.Cmd
	exited                          chan error
}

func (p *ltiopProcess) start() error {
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	public := "http://" + p.listen
	cmd := exec.Command(p.binary)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+p.kubeconfig,
		"LTIOP_NAMESPACE="+namespace,
		"LTIOP_PUBLIC_URL="+public,
		"LTIOP_LISTEN="+p.listen,
		"LTIOP_METRICS_LISTEN=0",
		"LTIOP_DEV_MODE=true",
		"LTIOP_LAUNCH_URL="+public+"/scale/launched",
		"LTIOP_SHUTDOWN_DELAY=0s",
		// The login measurement comes from one address, far faster than any school.
		"LTIOP_RATE_LIMIT_LAUNCH=0",
	)
	if p.metrics != "" {
		cmd.Env = append(cmd.Env, "LTIOP_METRICS_LISTEN="+p.metrics)
	}
	if p.pprof {
		cmd.Env = append(cmd.Env, "LTIOP_ENABLE_PPROF=true")
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.binary, err)
	}
	p.cmd, p.exited = cmd, make(chan error, 1)
	go func() {
		p.exited <- cmd.Wait()
		logFile.Close()
	}()
	return nil
}

// stop ends the process with SIGTERM (SIGKILL after 30 s) and waits for it.
func (p *ltiopProcess) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

// alive reports an early exit as an error.
func (p *ltiopProcess) alive() error {
	select {
	case err := <-p.exited:
		p.cmd = nil
		return fmt.Errorf("ltiop exited (%v); see %s", err, p.log) //nolint:errorlint // a process that exits cleanly sends nil; %v prints it as <nil>
	default:
		return nil
	}
}

// status reads a kB field of /proc/<pid>/status, in bytes.
func (p *ltiopProcess) status(field string) int64 {
	if p.cmd == nil {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *ltiopProcess) rss() int64 { return p.status("VmRSS") }
func (p *ltiopProcess) hwm() int64 { return p.status("VmHWM") }

// cpu is the process's user and system time so far.
func (p *ltiopProcess) cpu() time.Duration {
	if p.cmd == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks
}

// cpuProfile records a CPU profile of the process for d through its pprof endpoint.
func (p *ltiopProcess) cpuProfile(ctx context.Context, d time.Duration, file string) error {
	return p.saveProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d.Seconds()))), file)
}

// saveProfile writes the pprof endpoint path (with its query) to file.
func (p *ltiopProcess) saveProfile(ctx context.Context, path, file string) error {
	url := "http://" + p.metrics + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", res.StatusCode, b)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// heap reads the Go runtime's heap figures from the metrics endpoint: the bytes allocated
// (live and not yet collected), the heap size at which the next collection starts, and the
// soft memory limit (GOMEMLIMIT; "none" when unset). RSS follows the first two: without a
// limit the heap may grow to twice what stays alive before a collection.
func (p *ltiopProcess) heap(ctx context.Context) string {
	values, err := p.metricValues(ctx)
	if err != nil {
		return err.Error()
	}
	limit := "none"
	if l, ok := values["go_gc_gomemlimit_bytes"]; ok && l < 1<<62 {
		limit = mib(int64(l))
	}
	return mib(int64(values["go_memstats_heap_alloc_bytes"])) + " / " + mib(int64(values["go_memstats_next_gc_bytes"])) + " / " + limit
}

// livePerThousand is the heap allocated per 1,000 registrations; right after a forced
// collection, that is what stays alive.
func (p *ltiopProcess) livePerThousand(ctx context.Context, n int) string {
	values, err := p.metricValues(ctx)
	if err != nil {
		return err.Error()
	}
	return mib(int64(values["go_memstats_heap_alloc_bytes"] * 1000 / float64(max(n, 1))))
}

// metricValues reads the metrics endpoint's unlabelled samples.
func (p *ltiopProcess) metricValues(ctx context.Context) (map[string]float64, error) {
	if p.metrics == "" {
		return nil, fmt.Errorf("no metrics endpoint")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	values := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			values[name] = v
		}
	}
	return values, sc.Err()
}
