package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is the redis-server the demo starts when it runs several replicas: the replay
// store they share. It runs on a free loopback port, in a temporary directory, without
// persistence, and is gone when the demo stops.
type redisServer struct {
	URL    string // redis://127.0.0.1:<port>/0
	cmd    *exec.Cmd
	exited chan error
	dir    string
}

// redisMissing says what to install; the demo checks before it starts anything (and
// hack/demo.sh, with the same words, before it builds anything).
const redisMissing = "LTIOP_DEMO_REPLICAS=%d needs redis-server on the PATH, for the replay store the replicas share.\n" +
	"Install it (Debian/Ubuntu: sudo apt-get install redis-server), or set LTIOP_REPLAY_STORE to a Redis of your own."

// startRedis runs bin (redis-server) and waits until it answers PING.
func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "ltiop-demo-redis-")
	if err != nil {
		return nil, err
	}
	// A free port can be taken between finding it and redis-server binding it: try again.
	for try := 1; ; try++ {
		r, err := runRedis(ctx, bin, dir)
		if err == nil {
			return r, nil
		}
		if try == 3 || ctx.Err() != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

func runRedis(ctx context.Context, bin, dir string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Not CommandContext: the replicas stop first, then stop() ends redis-server.
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	out := &bytes.Buffer{} // shown only when it does not start
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	r := &redisServer{URL: "redis://" + addr + "/0", cmd: cmd, exited: make(chan error, 1), dir: dir}
	go func() { r.exited <- cmd.Wait() }()

	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer client.Close()
	deadline := time.After(10 * time.Second)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := client.Ping(pingCtx).Err()
		cancel()
		if err == nil {
			return r, nil
		}
		select {
		case err := <-r.exited:
			return nil, fmt.Errorf("redis-server on port %d exited (%v):\n%s", port, err, out) //nolint:errorlint // a process that exits cleanly sends nil; %v prints it as <nil>
		case <-deadline:
			r.kill()
			return nil, fmt.Errorf("redis-server on port %d did not answer PING within 10s:\n%s", port, out)
		case <-ctx.Done():
			r.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends redis-server (it may have stopped already: Ctrl-C reaches the whole process
// group) and removes its directory.
func (r *redisServer) stop() {
	r.kill()
	_ = os.RemoveAll(r.dir)
}

func (r *redisServer) kill() {
	_ = r.cmd.Process.Kill()
	<-r.exited
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
