package testredis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Group is a replicated Redis as Sentinel set-ups run it: a master, its replicas, and one
// Sentinel that promotes a replica when the master stops answering.
type Group struct {
	// MasterName is the name the Sentinel monitors the master under.
	MasterName string
	// Servers are the master (Servers[0] at the start) and its replicas.
	Servers []*Server
	// Sentinel is the sentinel (quorum one).
	Sentinel *Server
}

// StartGroup runs a master, replicas replicas of it and a Sentinel that declares the master
// down after downAfter without an answer, and waits until every replica follows the master
// and the Sentinel knows them all.
func StartGroup(tb TB, masterName string, replicas int, downAfter time.Duration) *Group {
	tb.Helper()
	// A replica that (re)joins empty needs a full sync: start it at once rather than
	// after the default 5 s wait for more replicas to share it.
	opt := WithArgs("--repl-diskless-sync-delay", "0")
	master := Start(tb, opt)
	g := &Group{MasterName: masterName, Servers: []*Server{master}}
	for range replicas {
		g.Servers = append(g.Servers, Start(tb, opt, WithArgs("--replicaof", "127.0.0.1", master.Port())))
	}
	if err := g.await(10*time.Second, "the replicas follow the master", func() bool { return g.follows(master) }); err != nil {
		tb.Fatal(err)
	}
	g.Sentinel = Start(tb, WithSentinel(masterName, master.Addr, downAfter))
	if err := g.await(10*time.Second, "the Sentinel knows the replicas", g.Healthy); err != nil {
		tb.Fatal(err)
	}
	return g
}

// Master is the master as clients find it: the server the Sentinel names, when it also
// says it is the master; nil while a failover is under way.
func (g *Group) Master() *Server {
	addr, err := g.Sentinel.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.MasterName).StringSlice()
	if err != nil || len(addr) != 2 {
		return nil
	}
	i := slices.IndexFunc(g.Servers, func(s *Server) bool { return s.Port() == addr[1] })
	if i < 0 {
		return nil
	}
	if role, err := g.Servers[i].Do("ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		return nil
	}
	return g.Servers[i]
}

// Healthy says whether the set-up is whole again: there is a Master, the Sentinel has no
// failover under way, every other server follows the master, and the Sentinel knows each
// of them as a replica it reaches (so it could promote any of them).
func (g *Group) Healthy() bool {
	m := g.Master()
	if m == nil || !g.follows(m) {
		return false
	}
	master, err := g.Sentinel.Do("SENTINEL", "MASTER", g.MasterName).Slice()
	if err != nil || flags(master) != "master" {
		return false // s_down, failover_in_progress…
	}
	known, err := g.Sentinel.Do("SENTINEL", "REPLICAS", g.MasterName).Slice()
	if err != nil || len(known) != len(g.Servers)-1 {
		return false
	}
	for _, r := range known {
		if r, ok := r.([]any); !ok || flags(r) != "slave" {
			return false // s_down, disconnected…
		}
	}
	return true
}

// Epoch is the Sentinel's configuration epoch of the master, which each failover raises:
// how many there were, whoever started them (-1 when the Sentinel does not answer).
func (g *Group) Epoch() int {
	master, err := g.Sentinel.Do("SENTINEL", "MASTER", g.MasterName).Slice()
	if err != nil {
		return -1
	}
	for j := 0; j+1 < len(master); j += 2 {
		if master[j] == "config-epoch" {
			if s, ok := master[j+1].(string); ok {
				if n, err := strconv.Atoi(s); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// flags is the "flags" field of a Sentinel reply about one instance (name, value, …).
func flags(fields []any) string {
	for j := 0; j+1 < len(fields); j += 2 {
		if fields[j] == "flags" {
			s, _ := fields[j+1].(string)
			return s
		}
	}
	return ""
}

// Rejoin starts a stopped server again, empty, as a replica of the Master: what a Redis
// pod's start script does (it asks the sentinels for the master first).
func (g *Group) Rejoin(s *Server) error {
	m := g.Master()
	if m == nil || m == s {
		return fmt.Errorf("no master to rejoin %s to", s.Addr)
	}
	s.mu.Lock()
	if i := slices.Index(s.args, "--replicaof"); i >= 0 {
		s.args = slices.Delete(s.args, i, i+3)
	}
	s.args = append(s.args, "--replicaof", "127.0.0.1", m.Port())
	s.mu.Unlock()
	s.Stop()
	return s.start()
}

// CutOff cuts master off from its replicas as a network partition would, while clients
// still reach it: it refuses their resynchronisation (an ACL denies PSYNC and SYNC) and
// drops their links. What it acknowledges from then on is on no replica.
func (g *Group) CutOff(master *Server) error {
	for _, cmd := range [][]any{{"ACL", "SETUSER", "default", "-psync", "-sync"}, {"CLIENT", "KILL", "TYPE", "replica"}} {
		if err := master.Do(cmd...).Err(); err != nil {
			return fmt.Errorf("%v: %w", cmd, err)
		}
	}
	info, err := master.Do("INFO", "replication").Text()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "connected_slaves:0") {
		return fmt.Errorf("the replicas are still linked:\n%s", info)
	}
	return nil
}

// follows says whether every server but master replicates it with the link up and has
// confirmed a write made now (WAIT): a replica that has just synced receives the stream
// only from its first acknowledgement on, up to a second later, and until then it would
// miss the uses the others confirm.
func (g *Group) follows(master *Server) bool {
	info, err := master.Do("INFO", "replication").Text()
	if err != nil {
		return false
	}
	online := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			online++
		}
	}
	if online != len(g.Servers)-1 {
		return false
	}
	for _, s := range g.Servers {
		if s == master {
			continue
		}
		info, err := s.Do("INFO", "replication").Text()
		if err != nil || !strings.Contains(info, "master_port:"+master.Port()+"\r") || !strings.Contains(info, "master_link_status:up") {
			return false
		}
	}
	c := master.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var wait *goredis.Cmd
	_, err = c.Pipelined(ctx, func(p goredis.Pipeliner) error { // WAIT counts its own connection's writes
		p.Set(ctx, "testredis:synced", time.Now().UnixNano(), time.Minute)
		wait = p.Do(ctx, "WAIT", len(g.Servers)-1, 500)
		return nil
	})
	n, _ := wait.Int()
	return err == nil && n == len(g.Servers)-1
}

func (g *Group) await(limit time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval
	}
	return nil
}

// Do sends one command (ROLE, INFO, ACL…) on a connection of its own, bounded by a second:
// the test's own questions and faults, not what is tested.
func (s *Server) Do(args ...any) *goredis.Cmd {
	c := s.client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Do(ctx, args...)
}

func (s *Server) client() *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: s.Addr, Password: s.Password, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		PoolSize: 1, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
}
