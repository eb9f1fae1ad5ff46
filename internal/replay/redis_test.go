package replay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ltiop/ltiop/test/utils/testredis"
)

func newRedis(t testing.TB, srv *testredis.Server, prefix string, timeout time.Duration) *Redis {
	t.Helper()
	s, err := NewRedis(RedisOptions{URL: srv.URL, Password: srv.Password, KeyPrefix: prefix, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// inspect is a plain client for looking at what the store wrote.
func inspect(t testing.TB, srv *testredis.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: srv.Password, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisContract(t *testing.T) {
	srv := testredis.Start(t)
	checkContract(t, newRedis(t, srv, "ltiop:test:", 0))
}

// Two replicas (two stores on one server) refuse each other's used items.
func TestRedisReplicasShareUses(t *testing.T) {
	srv := testredis.Start(t)
	a, b := newRedis(t, srv, "ltiop:ns:", 0), newRedis(t, srv, "ltiop:ns:", 0)
	ctx, now := context.Background(), time.Now()
	exp := now.Add(time.Minute)
	for _, step := range []struct {
		s    *Redis
		key  string
		want bool
	}{{a, "nonce:1", true}, {b, "nonce:1", false}, {a, "nonce:1", false}, {b, "nonce:2", true}, {a, "nonce:2", false}} {
		first, err := step.s.Use(ctx, step.key, exp, now)
		if err != nil || first != step.want {
			t.Fatalf("Use(%s) = %v, %v; want %v", step.key, first, err, step.want)
		}
	}
	// Another installation (another prefix) on the same server is not affected.
	if first, err := newRedis(t, srv, "ltiop:other:", 0).Use(ctx, "nonce:1", exp, now); err != nil || !first {
		t.Fatalf("another prefix: %v, %v", first, err)
	}
}

// The TTL is the item's remaining validity, rounded up to the millisecond: the item is
// refused until then and forgotten after.
func TestRedisTTLIsTheRemainingValidity(t *testing.T) {
	srv := testredis.Start(t)
	s, c := newRedis(t, srv, "p:", 0), inspect(t, srv)
	ctx, now := context.Background(), time.Now()
	if first, err := s.Use(ctx, "long", now.Add(10*time.Minute), now); err != nil || !first {
		t.Fatal(first, err)
	}
	ttl, err := c.PTTL(ctx, s.Key("long")).Result()
	if err != nil || ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Fatalf("PTTL %v, %v; want about 10m", ttl, err)
	}
	// 1 µs of validity is kept for 1 ms, not 0 (which Redis would refuse).
	if first, err := s.Use(ctx, "tiny", now.Add(time.Microsecond), now); err != nil || !first {
		t.Fatal(first, err)
	}

	start := time.Now()
	if first, err := s.Use(ctx, "short", start.Add(100*time.Millisecond), start); err != nil || !first {
		t.Fatal(first, err)
	}
	for {
		first, err := s.Use(ctx, "short", time.Now().Add(time.Minute), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if first {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the item was not forgotten after it expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("the item was forgotten after %v, before it expired", waited)
	}
}

// Keys are the prefix and the SHA-256 of the item: neither a key nor a value holds a token.
func TestRedisKeysAreHashedAndPrefixed(t *testing.T) {
	srv := testredis.Start(t)
	s, c := newRedis(t, srv, "ltiop:lti-system:", 0), inspect(t, srv)
	ctx, now := context.Background(), time.Now()
	tokens := []string{"state:eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0", "jti\x00client-1\x00assertion-jti-42", "oauth-code:Zm9vYmFy"}
	for _, tok := range tokens {
		if _, err := s.Use(ctx, tok, now.Add(time.Minute), now); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil || len(keys) != len(tokens) {
		t.Fatalf("keys %q, %v", keys, err)
	}
	for i, tok := range tokens {
		sum := sha256.Sum256([]byte(tok))
		want := "ltiop:lti-system:" + base64.RawURLEncoding.EncodeToString(sum[:])
		if s.Key(tok) != want {
			t.Errorf("Key(%q) = %s, want %s", tok, s.Key(tok), want)
		}
		if n, _ := c.Exists(ctx, want).Result(); n != 1 {
			t.Errorf("no key %s for item %d", want, i)
		}
	}
	for _, k := range keys {
		v, _ := c.Get(ctx, k).Result()
		for _, tok := range tokens {
			for _, part := range strings.Split(tok, "\x00") {
				if strings.Contains(k, part) || strings.Contains(v, part) {
					t.Errorf("key %q = %q holds %q of an item", k, v, part)
				}
			}
		}
	}
}

// A stopped server fails every use with ErrUnavailable, within the time bound; once it is
// back, uses succeed again without a new store.
func TestRedisServerStoppedAndBack(t *testing.T) {
	srv := testredis.Start(t)
	const timeout = 200 * time.Millisecond
	s := newRedis(t, srv, "p:", timeout)
	ctx, now := context.Background(), time.Now()
	if first, err := s.Use(ctx, "before", now.Add(time.Minute), now); err != nil || !first {
		t.Fatal(first, err) // a pooled connection exists: the stop must break it
	}
	srv.Stop()
	start := time.Now()
	first, err := s.Use(ctx, "during", now.Add(time.Minute), now)
	if !errors.Is(err, ErrUnavailable) || first {
		t.Fatalf("server stopped: %v, %v; want ErrUnavailable", first, err)
	}
	// A refused connection is an answer: neither attempt waits for its timeout (go-redis
	// alone would dial again after a pause).
	if took := time.Since(start); took >= timeout {
		t.Errorf("a use on a stopped server took %v", took)
	}
	// A long outage: more failed dials than the pool has connections, after which the
	// client stops dialing and probes the server once a second.
	for range 50 {
		if _, err := s.Use(ctx, "during", now.Add(time.Minute), now); err == nil {
			t.Fatal("a use succeeded on a stopped server")
		}
	}
	srv.Restart()
	back := time.Now()
	for {
		first, err := s.Use(ctx, "during", now.Add(time.Minute), now)
		if err == nil {
			if !first {
				t.Fatal("an item of the outage was recorded")
			}
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("server back for 5s, uses still fail: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("uses succeed again %v after the server is back", time.Since(back).Round(time.Millisecond))
}

// A server that does not answer (paused) fails the use after the timeout and one retry,
// not later.
func TestRedisSlowServerFailsWithinTheBound(t *testing.T) {
	srv := testredis.Start(t)
	const timeout = 50 * time.Millisecond
	s := newRedis(t, srv, "p:", timeout)
	ctx, now := context.Background(), time.Now()
	if _, err := s.Use(ctx, "warm", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	start := time.Now()
	_, err := s.Use(ctx, "frozen", now.Add(time.Minute), now)
	took := time.Since(start)
	srv.Resume()
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("paused server: %v, want ErrUnavailable", err)
	}
	if took < 2*timeout || took > 2*timeout+500*time.Millisecond {
		t.Errorf("failed after %v, want two attempts of %v", took, timeout)
	}
	// The connections that timed out are dropped: the next use is answered.
	if first, err := s.Use(ctx, "after", now.Add(time.Minute), now); err != nil || !first {
		t.Fatalf("after resume: %v, %v", first, err)
	}
}

// The retry recognises its own earlier write (the reply was lost) as the first use, and
// still refuses anyone else's.
func TestRedisRetryRecognisesItsOwnWrite(t *testing.T) {
	srv := testredis.Start(t)
	s := newRedis(t, srv, "p:", 0)
	ctx := context.Background()
	k := s.Key("item")
	if first, err := s.attempt(ctx, k, "mine", 60_000, false); err != nil || !first {
		t.Fatal(first, err)
	}
	if first, err := s.attempt(ctx, k, "mine", 60_000, true); err != nil || !first {
		t.Fatalf("retry of its own write: %v, %v", first, err)
	}
	if first, err := s.attempt(ctx, k, "theirs", 60_000, true); err != nil || first {
		t.Fatalf("retry of another use: %v, %v", first, err)
	}
	if first, err := s.attempt(ctx, s.Key("new"), "mine", 60_000, true); err != nil || !first {
		t.Fatalf("retry of a new item: %v, %v", first, err)
	}
}

// The password comes from the option or from a file (a mounted Secret); without it the
// server refuses, and the use fails closed.
func TestRedisPassword(t *testing.T) {
	srv := testredis.Start(t, testredis.WithPassword("s3cret pass"))
	ctx, now := context.Background(), time.Now()

	noPassword, err := NewRedis(RedisOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer noPassword.Close()
	if _, err := noPassword.Use(ctx, "x", now.Add(time.Minute), now); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("without the password: %v", err)
	}

	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("s3cret pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, closer, err := Open(Options{URL: srv.URL, PasswordFile: file, KeyPrefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if first, err := fromFile.Use(ctx, "x", now.Add(time.Minute), now); err != nil || !first {
		t.Fatalf("password from a file: %v, %v", first, err)
	}
	fromEnv := newRedis(t, srv, "p:", 0)
	if first, err := fromEnv.Use(ctx, "x", now.Add(time.Minute), now); err != nil || first {
		t.Fatalf("password option: %v, %v; want a refused replay", first, err)
	}

	if _, _, err := Open(Options{URL: srv.URL, Password: "a", PasswordFile: file}); err == nil {
		t.Error("a password and a password file were both accepted")
	}
	if _, err := NewRedis(RedisOptions{URL: "redis://:inurl@" + srv.Addr, Password: "a"}); err == nil {
		t.Error("a password in the URL and on its own were both accepted")
	}
	if _, _, err := Open(Options{URL: srv.URL, PasswordFile: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing password file was accepted")
	}
}

func TestOpenAndRedact(t *testing.T) {
	for _, url := range []string{"", MemoryURL} {
		s, closer, err := Open(Options{URL: url, MemoryItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*observed).Store.(*Memory); !ok {
			t.Errorf("Open(%q) = %T", url, s)
		}
		_ = closer.Close()
	}
	for _, bad := range []string{"http://host:6379", "redis://", "redis://:pw@host:6379/%zz", "host:6379", "unix:///tmp/redis.sock", "rediss://host:6380/0?skip_verify=true"} {
		_, _, err := Open(Options{URL: bad})
		if err == nil {
			t.Errorf("Open(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("Open(%q) repeats the password: %v", bad, err)
		}
	}
	if got := Redact("rediss://user:s3cret@redis.example:6380/2"); strings.Contains(got, "s3cret") || !strings.Contains(got, "redis.example:6380/2") {
		t.Errorf("Redact = %s", got)
	}
	if got := Redact("redis://:s3cret@host/%zz"); strings.Contains(got, "s3cret") {
		t.Errorf("Redact = %s", got)
	}
}
