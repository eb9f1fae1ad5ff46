package replay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// go-redis would print a line of its own for each failed dial: every failure reaches the
// caller of Use, and the metrics and the rate-limited log of Observe, instead.
func init() { redis.SetLogger(silent{}) }

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// DefaultTimeout bounds one Redis attempt when RedisOptions.Timeout is zero.
const DefaultTimeout = 100 * time.Millisecond

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// URL is redis://[user[:password]@]host[:port][/db], or rediss:// for TLS.
	URL string
	// Password, when set, authenticates instead of a password in URL.
	Password string
	// KeyPrefix starts every key, e.g. "ltiop:<namespace>:".
	KeyPrefix string
	// Timeout bounds one attempt (connecting included); zero is DefaultTimeout.
	Timeout time.Duration
	// Sentinel, when set, finds the master through Redis Sentinel: URL then gives only the
	// master's user, password, database and TLS (its host is not dialled; redis:///0 will
	// do). With rediss:// its host is required: the name the certificates are checked
	// against, so that the address a sentinel names must hold a certificate for it.
	Sentinel *SentinelOptions
	// WaitReplicas, when above zero, makes each recorded use wait (Redis WAIT) until that
	// many replicas have it, for at most half the timeout; a use fewer replicas confirmed
	// fails with ErrUnavailable. Replication is asynchronous: without it, a failover can
	// forget the uses recorded just before the master died.
	WaitReplicas int
}

// SentinelOptions locate a Redis master through Sentinel.
type SentinelOptions struct {
	// MasterName is the name the sentinels monitor the master under.
	MasterName string
	// Addrs are the sentinels' host:port addresses.
	Addrs []string
	// Username and Password authenticate to the sentinels (not to the master).
	Username, Password string
}

// Redis is a Store on a Redis-protocol server (Redis 7, Valkey) that every replica shares.
// Each Use is one atomic SET key value NX PX ttl: the key is KeyPrefix and the SHA-256 of
// the item (the server never sees a token or an id), the TTL is what is left of the
// item's validity. An attempt that fails or outlasts the timeout is retried once; then
// Use fails with ErrUnavailable.
type Redis struct {
	client  *redis.Client
	prefix  string
	timeout time.Duration
	// Each Use writes a value of its own, so that a retry can tell its own earlier write
	// (the reply was lost) from another replica's: instance, then a counter.
	instance string
	seq      atomic.Uint64
	wait     int   // WaitReplicas
	waitMS   int64 // WAIT's own timeout
}

// NewRedis connects lazily: a server down at start is reported by Use, not here.
func NewRedis(o RedisOptions) (*Redis, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || (u.Host == "" && o.Sentinel == nil) {
		// The URL may carry a password: never repeat it.
		return nil, errors.New("replay store: the URL must be redis://host:port/db or rediss://host:port/db")
	}
	if o.Sentinel != nil && u.Scheme == "rediss" && u.Hostname() == "" {
		// The sentinels name the master's address; the URL's host is the name every
		// certificate (the master's, and the sentinels', reached with the same TLS
		// settings) is checked against. Without one go-redis checks against "localhost".
		return nil, errors.New("replay store: with Sentinel, a rediss:// URL must name the master's host name (the name its certificate holds): rediss://redis-master.example/0")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		// go-redis reads options from the query, skip_verify among them: the time bounds
		// and the TLS check are ltiop's to set.
		return nil, errors.New("replay store: the URL takes no query parameters")
	}
	opts, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("replay store: %w", err)
	}
	if o.Password != "" {
		if opts.Password != "" {
			return nil, errors.New("replay store: a password is set both in the URL and on its own")
		}
		opts.Password = o.Password
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The time bound is ltiop's: every wait is cut at the attempt's deadline, go-redis
	// does not retry on its own (Use retries once), and nothing but SET (and EXISTS, for
	// Seen) goes over the connection (RESP2, no CLIENT SETINFO, no maintenance
	// notifications), which any Redis-protocol server understands.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}

	var id [8]byte
	_, _ = rand.Read(id[:])
	client, err := newClient(opts, o.Sentinel)
	if err != nil {
		return nil, err
	}
	if o.WaitReplicas < 0 {
		return nil, errors.New("replay store: WaitReplicas must not be negative")
	}
	return &Redis{client: client, prefix: o.KeyPrefix, timeout: timeout, instance: hex.EncodeToString(id[:]),
		wait: o.WaitReplicas, waitMS: max(1, timeout.Milliseconds()/2)}, nil
}

// newClient is a client of the server opts names, or, with sentinel, of the master the
// sentinels name, with the same time bounds. While the sentinels name no master that
// answers (a failover under way), every attempt fails, so Use fails closed.
func newClient(opts *redis.Options, sentinel *SentinelOptions) (*redis.Client, error) {
	if sentinel == nil {
		return redis.NewClient(opts), nil
	}
	if sentinel.MasterName == "" || len(sentinel.Addrs) == 0 {
		return nil, errors.New("replay store: Sentinel needs a master name and at least one sentinel address")
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: sentinel.MasterName, SentinelAddrs: sentinel.Addrs,
		SentinelUsername: sentinel.Username, SentinelPassword: sentinel.Password,
		Username: opts.Username, Password: opts.Password, DB: opts.DB, TLSConfig: opts.TLSConfig,
		DialTimeout: opts.DialTimeout, ReadTimeout: opts.ReadTimeout, WriteTimeout: opts.WriteTimeout,
		PoolTimeout: opts.PoolTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		Protocol: 2, DisableIdentity: true,
	}), nil
}

// Close closes the connections.
func (s *Redis) Close() error { return s.client.Close() }

// Key returns the Redis key of an item: the prefix and the unpadded base64url SHA-256.
func (s *Redis) Key(item string) string {
	sum := sha256.Sum256([]byte(item))
	return s.prefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

// Use records key until expires; see Store.
func (s *Redis) Use(ctx context.Context, key string, expires, now time.Time) (bool, error) {
	ttl := expires.Sub(now)
	if ttl <= 0 {
		return false, nil
	}
	// Milliseconds rounded up (at least 1): an item is never forgotten before it expires.
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	k := s.Key(key)
	v := s.instance + ":" + strconv.FormatUint(s.seq.Add(1), 36)
	first, err := s.attempt(ctx, k, v, ms, false)
	if err != nil && ctx.Err() == nil {
		first, err = s.attempt(ctx, k, v, ms, true)
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return first, nil
}

// attempt sends one SET k v NX PX ms, bounded by the timeout. A retry adds GET: the
// failed attempt may have set the key before its reply was lost, and the value read back
// tells whether it did (GET with NX needs Redis 7 or Valkey). With WaitReplicas, a first
// use counts only once enough replicas confirmed it (WAIT, on the same connection).
func (s *Redis) attempt(ctx context.Context, k, v string, ms int64, retry bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := []any{"SET", k, v, "NX", "PX", ms}
	if retry {
		args = []any{"SET", k, v, "NX", "GET", "PX", ms}
	}
	var set, wait *redis.Cmd
	if s.wait == 0 {
		set = s.client.Do(ctx, args...)
	} else {
		// WAIT counts the replicas that have the writes of its own connection: a pipeline
		// sends both on one.
		pipe := s.client.Pipeline()
		set = pipe.Do(ctx, args...)
		wait = pipe.Do(ctx, "WAIT", s.wait, s.waitMS)
		_, _ = pipe.Exec(ctx)
	}
	first, err := firstUse(set, v, retry)
	if err != nil || !first || wait == nil {
		return first, err
	}
	switch n, err := wait.Int(); {
	case err != nil:
		return false, err
	case n < s.wait:
		return false, fmt.Errorf("%d of %d replicas confirmed the use in %d ms", n, s.wait, s.waitMS)
	}
	return true, nil
}

// firstUse reads SET's reply: NX refused (nil) means an earlier use, except on a retry
// (SET … GET), where nil means no key and an old value is ours (v) or another's.
func firstUse(set *redis.Cmd, v string, retry bool) (bool, error) {
	err := set.Err()
	if !retry {
		if errors.Is(err, redis.Nil) {
			return false, nil // NX: the key exists, this is not its first use
		}
		return err == nil, err
	}
	if errors.Is(err, redis.Nil) {
		return true, nil // there was no key: set now
	}
	if err != nil {
		return false, err
	}
	old, err := set.Text()
	if err != nil {
		return false, err
	}
	return old == v, nil
}
