package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// api calls ltiop over HTTP as an integrator and an LMS would.
type api struct {
	base, key string
	http      *http.Client
}

func newAPI(base, key string) *api {
	return &api{base: base, key: key, http: &http.Client{
		Timeout: time.Minute,
		// Logins answer with a redirect to the LMS: measure the answer, do not follow it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
	}}
}

type created struct{ ID, URL, ClientID string }

// do sends a request with the API key and reads the answer.
func (a *api) do(ctx context.Context, method, target string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	if len(target) > 0 && target[0] == '/' {
		target = a.base + target
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// waitReady polls /readyz until it answers 200.
func (a *api) waitReady(ctx context.Context, proc *ltiopProcess, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if err := proc.alive(); err != nil {
			return err
		}
		if status, _, err := a.do(ctx, "GET", "/readyz", nil); err == nil && status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not 200 after %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func platformBody(i int) map[string]any {
	lms := fmt.Sprintf("https://lms-%05d.scale.example", i)
	return map[string]any{
		"url": lms, "clientId": fmt.Sprintf("client-%05d", i), "name": fmt.Sprintf("LMS %d", i),
		"authenticationEndpoint": lms + "/auth", "accesstokenEndpoint": lms + "/token",
		"authConfig": map[string]any{"method": "JWK_SET", "key": lms + "/jwks"},
	}
}

// createOne creates registration i, retrying while ltiop answers 429 or 503.
func (a *api) createOne(ctx context.Context, i int) (created, error) {
	body := platformBody(i)
	for attempt := 0; ; attempt++ {
		status, b, err := a.do(ctx, "POST", "/api/platforms", body)
		if err == nil && status == http.StatusCreated {
			var p struct{ ID string }
			if err := json.Unmarshal(b, &p); err != nil {
				return created{}, err
			}
			return created{ID: p.ID, URL: body["url"].(string), ClientID: body["clientId"].(string)}, nil
		}
		if err == nil && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
			return created{}, fmt.Errorf("POST /api/platforms: %d %s", status, b)
		}
		if attempt == 10 {
			return created{}, fmt.Errorf("POST /api/platforms: %d %s %v", status, b, err) //nolint:errorlint // err may be nil here (a status failure); %v prints it as <nil>
		}
		select {
		case <-ctx.Done():
			return created{}, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
}

// createMany creates registrations from..to-1 through the API, parallel at a time.
func (a *api) createMany(ctx context.Context, from, to, parallel int) ([]created, latencies, error) {
	return fanOut(ctx, from, to, parallel, "created", a.createOne)
}

// fanOut runs create for from..to-1, parallel at a time, until the first error, and
// returns what was made with the time each took; progress is said every 10 s as verb.
func fanOut(ctx context.Context, from, to, parallel int, verb string, create func(context.Context, int) (created, error)) ([]created, latencies, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var mu sync.Mutex
	var out []created
	var lat latencies
	var firstErr error
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range work {
				start := time.Now()
				c, err := create(ctx, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				out, lat = append(out, c), append(lat, time.Since(start))
				mu.Unlock()
			}
		})
	}
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
feed:
	for i := from; i < to; i++ {
		for {
			select {
			case work <- i:
				continue feed
			case <-ctx.Done():
				break feed
			case <-progress.C:
				say("%s %d of %d", verb, i-from, to-from)
			}
		}
	}
	close(work)
	wg.Wait()
	return out, lat, firstErr
}

type listPage struct {
	Platforms []struct {
		ID        string `json:"id"`
		PublicKey string `json:"publicKey"`
	} `json:"platforms"`
	Next string `json:"next"`
}

// walk pages through the whole list with limit, timing each page.
func (a *api) walk(ctx context.Context, limit int, each func(listPage)) (latencies, error) {
	var lat latencies
	for target := fmt.Sprintf("/api/platforms?limit=%d", limit); target != ""; {
		start := time.Now()
		status, b, err := a.do(ctx, "GET", target, nil)
		lat = append(lat, time.Since(start))
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d %s", target, status, b)
		}
		var p listPage
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		each(p)
		target = p.Next
	}
	return lat, nil
}

// waitAllKeys waits until n registrations show a public key in the list API.
func (a *api) waitAllKeys(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	lastSaid := time.Now()
	for {
		withKey := 0
		if _, err := a.walk(ctx, 1000, func(p listPage) {
			for _, q := range p.Platforms {
				if q.PublicKey != "" {
					withKey++
				}
			}
		}); err != nil {
			return err
		}
		if withKey >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d registrations have a key after %v", withKey, n, limit)
		}
		if time.Since(lastSaid) > 10*time.Second {
			say("%d of %d registrations have their key", withKey, n)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// loginLatency times OIDC login initiations of random registrations: the (iss,
// client_id) lookup, the sealed state and the redirect to the LMS.
func (a *api) loginLatency(ctx context.Context, regs []created, samples int) (latencies, error) {
	var lat latencies
	for range samples {
		r := regs[rand.IntN(len(regs))] //nolint:gosec // G404: picks a sample, not a secret
		start := time.Now()
		status, b, err := a.login(ctx, r)
		lat = append(lat, time.Since(start))
		if err != nil {
			return nil, err
		}
		if status != http.StatusFound {
			return nil, fmt.Errorf("login of %s: %d %s", r.ID, status, b)
		}
	}
	return lat, nil
}

func (a *api) login(ctx context.Context, r created) (int, []byte, error) {
	q := url.Values{"iss": {r.URL}, "client_id": {r.ClientID}, "login_hint": {"user-1"},
		"target_link_uri": {a.base + "/lti/launch"}}
	return a.do(ctx, "GET", "/lti/login?"+q.Encode(), nil)
}

// waitLogin waits until a login of r succeeds: the API server may say Ready a moment
// before ltiop's own cache has seen the status.
func (a *api) waitLogin(ctx context.Context, r created, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		status, b, err := a.login(ctx, r)
		if err == nil && status == http.StatusFound {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("login of %s still fails after %v: %w", r.ID, limit, err)
			}
			return fmt.Errorf("login of %s still fails after %v: %d %s", r.ID, limit, status, b)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pageLatency walks the list in pages of limit and counts what it saw.
func (a *api) pageLatency(ctx context.Context, limit int) (latencies, int, error) {
	seen := 0
	lat, err := a.walk(ctx, limit, func(p listPage) { seen += len(p.Platforms) })
	return lat, seen, err
}

// wholeList times the unpaged list.
func (a *api) wholeList(ctx context.Context) (time.Duration, int, error) {
	start := time.Now()
	status, b, err := a.do(ctx, "GET", "/api/platforms", nil)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET /api/platforms: %d", status)
	}
	return time.Since(start), len(b), err
}

// size is the length of a GET's answer.
func (a *api) size(ctx context.Context, target string) (int, error) {
	status, b, err := a.do(ctx, "GET", target, nil)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", target, status)
	}
	return len(b), err
}

// latencies are the durations of one kind of request.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func (l latencies) String() string {
	return fmt.Sprintf("%v / %v (%d requests)", l.quantile(0.5).Round(time.Microsecond), l.quantile(0.99).Round(time.Microsecond), len(l))
}
