// Package testredis runs a real redis-server for a test: on a free loopback port, with a
// temporary directory and no persistence (unless WithArgs turns it on), stopped when the
// test ends; StartGroup runs a master, replicas and a Sentinel. Without
// redis-server on PATH the test is skipped, unless CI is set: there it fails, so CI never
// passes by skipping (.ci/run installs Debian's redis-server package).
package testredis

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TB is what Start needs of a test: a *testing.T, or Ginkgo's GinkgoT().
type TB interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
	Cleanup(func())
	TempDir() string
}

// Server is one redis-server process.
type Server struct {
	// Addr is host:port on loopback; URL is redis://Addr/0 (no password in it).
	Addr, URL string
	// Password is the requirepass of the server ("" for none).
	Password string

	tb   TB
	bin  string
	dir  string
	port int

	args     []string // added to the command line (WithArgs)
	sentinel string   // when set, a sentinel monitoring this master line (WithSentinel)

	mu     sync.Mutex
	cmd    *exec.Cmd  // nil when stopped
	exited chan error // receives cmd's exit
}

// Option changes how the server runs.
type Option func(*Server)

// WithPassword makes the server require password.
func WithPassword(password string) Option { return func(s *Server) { s.Password = password } }

// WithArgs adds command-line arguments, e.g. "--replicaof", host, port.
func WithArgs(args ...string) Option { return func(s *Server) { s.args = append(s.args, args...) } }

// WithSentinel runs a Redis Sentinel (redis-server --sentinel) instead, monitoring the
// master at masterAddr under masterName with a quorum of one, that declares the master down
// after downAfter without an answer.
func WithSentinel(masterName, masterAddr string, downAfter time.Duration) Option {
	return func(s *Server) {
		host, port, _ := net.SplitHostPort(masterAddr)
		s.sentinel = "sentinel monitor " + masterName + " " + host + " " + port + " 1\n" +
			"sentinel down-after-milliseconds " + masterName + " " + strconv.FormatInt(downAfter.Milliseconds(), 10) + "\n" +
			"sentinel failover-timeout " + masterName + " 10000\n"
	}
}

// Port is the server's port, as a string (for --replicaof).
func (s *Server) Port() string { return strconv.Itoa(s.port) }

// Start runs redis-server and waits until it answers. It skips the test when redis-server
// is missing, and fails it instead when the environment variable CI is set.
func Start(tb TB, opts ...Option) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("redis-server is not on PATH and CI is set: install it (Debian/Ubuntu: apt-get install redis-server)")
		}
		tb.Skip("redis-server is not on PATH (Debian/Ubuntu: apt-get install redis-server); CI=1 makes this a failure")
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	for _, o := range opts {
		o(s)
	}
	tb.Cleanup(s.Stop)
	// A free port can be taken between its discovery and redis-server's bind: try again.
	for try := 0; ; try++ {
		s.port = freePort(tb)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		s.URL = "redis://" + s.Addr + "/0"
		err := s.start()
		if err == nil {
			return s
		}
		if try == 2 {
			tb.Fatal(err)
		}
	}
}

// Stop kills the server (a no-op when it is not running). Its data is gone.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts a stopped server again on the same port and directory, with the same
// arguments: empty, unless they turned persistence on (WithArgs("--appendonly", "yes")).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatal(err)
	}
}

// Pause freezes the process (SIGSTOP): connections are accepted by the kernel but nothing
// answers, as with a server that is overloaded or a network that drops packets.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.tb.Fatal("redis-server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatal(err)
	}
}

func (s *Server) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}
	if s.sentinel != "" {
		// A sentinel rewrites its configuration file: it must have one of its own.
		conf := s.dir + "/sentinel-" + strconv.Itoa(s.port) + ".conf"
		if err := os.WriteFile(conf, []byte(s.sentinel), 0o600); err != nil {
			return err
		}
		args = []string{conf, "--sentinel", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
			"--dir", s.dir, "--daemonize", "no", "--loglevel", "warning"}
	}
	args = append(args, s.args...)
	if s.Password != "" {
		args = append(args, "--requirepass", s.Password)
	}
	cmd := exec.Command(s.bin, args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for !s.answers() {
		select {
		case err := <-exited:
			return &startError{port: s.port, err: err, output: out.String()}
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return &startError{port: s.port, err: errTimeout, output: out.String()}
		}
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// answers says whether PING gets a reply (PONG, or NOAUTH from a server with a password).
func (s *Server) answers() bool {
	c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

func freePort(tb TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type startError struct {
	port   int
	err    error
	output string
}

func (e *startError) Error() string {
	return "redis-server on port " + strconv.Itoa(e.port) + ": " + e.err.Error() + "\n" + e.output
}

var errTimeout = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string { return "did not answer PING within 10s" }
