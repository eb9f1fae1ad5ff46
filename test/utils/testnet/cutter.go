// Package testnet makes network trouble on purpose, for tests of what ltiop does when a
// peer (the API server, a Redis) goes away: a TCP forwarder whose link can be cut.
package testnet

import (
	"io"
	"net"
	"sync"
)

// Cutter forwards TCP connections from a loopback port to an upstream address, until Cut:
// then every open connection is closed and new ones are closed as soon as they are
// accepted, as if the network to the upstream had gone. Restore reconnects. TLS passes
// through untouched.
type Cutter struct {
	upstream string
	ln       net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// NewCutter listens on a free loopback port and forwards to upstream ("host:port").
func NewCutter(upstream string) (*Cutter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &Cutter{upstream: upstream, ln: ln, conns: map[net.Conn]struct{}{}}
	go c.serve()
	return c, nil
}

// Addr is the loopback address to connect to instead of upstream.
func (c *Cutter) Addr() string { return c.ln.Addr().String() }

// Cut closes every forwarded connection and refuses new ones until Restore.
func (c *Cutter) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for conn := range c.conns {
		conn.Close()
	}
}

// Restore forwards new connections again.
func (c *Cutter) Restore() {
	c.mu.Lock()
	c.cut = false
	c.mu.Unlock()
}

// Close stops listening and closes every connection.
func (c *Cutter) Close() error {
	err := c.ln.Close()
	c.Cut()
	return err
}

func (c *Cutter) serve() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return // closed
		}
		go c.forward(down)
	}
}

func (c *Cutter) forward(down net.Conn) {
	if !c.track(down) {
		down.Close()
		return
	}
	defer c.untrack(down)
	up, err := net.Dial("tcp", c.upstream)
	if err != nil {
		return
	}
	if !c.track(up) {
		up.Close()
		return
	}
	defer c.untrack(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done // one side ended: end both
}

// track registers conn unless the link is cut.
func (c *Cutter) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return false
	}
	c.conns[conn] = struct{}{}
	return true
}

func (c *Cutter) untrack(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
	conn.Close()
}
