// Package replay is where every single-use rule of ltiop is recorded: tool-mode states,
// nonces and pending platform-storage launches, platform-mode nonces (the 30 s
// DUPLICATE_NONCE window), payloads, client-assertion jtis and deep-linking responses,
// OAuth one-time codes and states, completed registrations, and delivered platform notices.
//
// One Store is built by the composition root and shared by every handler. Two backends:
// Memory, for one replica, and Redis, a Redis-protocol server (Redis 7, Valkey) that all
// replicas share so that a rule holds across them. A Store that cannot record a use says
// so with an error, and the caller refuses the request: nothing is accepted unrecorded.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// Store records single-use items.
type Store interface {
	// Use records key as used until expires and reports whether this is its first use:
	// true the first time, false when key was used before and has not expired, and false
	// when expires is not after now (an expired item cannot be recorded). A non-nil error
	// (wrapping ErrUnavailable) means the use could not be recorded, and the caller must
	// refuse what it was checking.
	Use(ctx context.Context, key string, expires, now time.Time) (first bool, err error)
}

// ErrUnavailable is wrapped by every error of Use: the store could not be reached, or not
// within its time bound.
var ErrUnavailable = errors.New("replay store unavailable")

// MemoryURL selects the in-memory store.
const MemoryURL = "memory"

// Options select and configure a store.
type Options struct {
	// URL is "memory" (or empty) for Memory, or redis://[user@]host:port/db (rediss:// for
	// TLS) for a Redis-protocol server.
	URL string
	// Password authenticates to Redis; PasswordFile names a file holding it instead (a
	// mounted Secret), read once by Open. At most one of them, and none in URL with them.
	Password, PasswordFile string
	// KeyPrefix starts every Redis key: one per installation sharing a server.
	KeyPrefix string
	// Timeout bounds one Redis attempt; a failed attempt is retried once.
	Timeout time.Duration
	// MemoryItems bounds Memory.
	MemoryItems int
	// Sentinel, when set, finds the Redis master through Redis Sentinel (see RedisOptions).
	Sentinel *SentinelOptions
	// WaitReplicas, when above zero, confirms each use on that many replicas (see
	// RedisOptions).
	WaitReplicas int
}

// Open builds the store o selects, counted in the metrics. Close releases its connections.
func Open(o Options) (Store, io.Closer, error) {
	if o.URL == "" || o.URL == MemoryURL {
		return Observe(NewMemory(o.MemoryItems), "memory"), nothingToClose{}, nil
	}
	password := o.Password
	if o.PasswordFile != "" {
		if password != "" {
			return nil, nil, errors.New("replay store: a password and a password file are both set")
		}
		b, err := os.ReadFile(o.PasswordFile)
		if err != nil {
			return nil, nil, fmt.Errorf("replay store: reading the password file: %w", err)
		}
		// A file written by hand often ends with a newline that is not part of the password.
		password = strings.TrimRight(string(b), "\r\n")
	}
	r, err := NewRedis(RedisOptions{URL: o.URL, Password: password, KeyPrefix: o.KeyPrefix, Timeout: o.Timeout, Sentinel: o.Sentinel, WaitReplicas: o.WaitReplicas})
	if err != nil {
		return nil, nil, err
	}
	return Observe(r, "redis"), r, nil
}

// Redact returns a store URL fit for logs: the password, if any, replaced.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)" // it may hold a password: show nothing of it
	}
	return u.Redacted()
}

type nothingToClose struct{}

func (nothingToClose) Close() error { return nil }
