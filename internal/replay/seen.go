package replay

import (
	"context"
	"fmt"
	"time"
)

// Checker is a Store that can also tell whether a key is recorded, without recording it.
// Platform notices need it: a notice id is recorded only once the integrator took the
// notice, so a delivery that failed is delivered again when the platform retries, and a
// notice already delivered is looked up first.
type Checker interface {
	Seen(ctx context.Context, key string, now time.Time) (bool, error)
}

// Seen reports whether key is recorded and not expired in s. A store that cannot tell, or
// could not be reached, returns an error wrapping ErrUnavailable.
func Seen(ctx context.Context, s Store, key string, now time.Time) (bool, error) {
	c, ok := s.(Checker)
	if !ok {
		return false, fmt.Errorf("%w: the store cannot look a key up", ErrUnavailable)
	}
	return c.Seen(ctx, key, now)
}

// Seen reports whether id is remembered and not expired at now. The error is always nil.
func (c *Memory) Seen(_ context.Context, id string, now time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sec, ok := c.ids[id]
	return ok && sec > now.Unix(), nil
}

// Seen sends EXISTS for the key, retried once like Use.
func (s *Redis) Seen(ctx context.Context, key string, _ time.Time) (bool, error) {
	k := s.Key(key)
	n, err := s.exists(ctx, k)
	if err != nil && ctx.Err() == nil {
		n, err = s.exists(ctx, k)
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return n > 0, nil
}

func (s *Redis) exists(ctx context.Context, k string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.client.Do(ctx, "EXISTS", k).Int64()
}

// Seen passes the look-up through, logging an error like Use.
func (o *observed) Seen(ctx context.Context, key string, now time.Time) (bool, error) {
	seen, err := Seen(ctx, o.Store, key, now)
	if err != nil {
		o.failed.Inc()
		o.logError(err)
	}
	return seen, err
}
