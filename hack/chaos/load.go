package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ltiop/ltiop/internal/paths"
)

// outcome is one complete launch (login → launch → /api/idtoken) of the load.
type outcome struct {
	start, end time.Time
	reason     string // "" when it succeeded; else the step and why, e.g. "launch: 503 REPLAY_STORE_UNAVAILABLE"
}

// launched is what replaying a launch needs: the LMS's form post and the binding cookies.
type launched struct {
	form    url.Values
	cookies []*http.Cookie
}

// load is a steady flow of complete launches by concurrent browsers, each launch replayed
// once right after it succeeded (the replay must be refused).
type load struct {
	c        *cluster
	browsers int
	stop     chan struct{}
	stopOnce sync.Once
	done     sync.WaitGroup

	mu       sync.Mutex
	outcomes []outcome
	recent   []launched // the last successful launches, to replay across a fault

	replaysRefused, replaysAccepted, replaysFailed atomic.Int64
	acceptedReplays                                []string // what was wrongly accepted, for the report
}

const recentKept = 32

func startLoad(c *cluster, browsers int) *load {
	l := &load{c: c, browsers: browsers, stop: make(chan struct{})}
	for range browsers {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			b := newBrowser(c)
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				start := time.Now()
				done, err := b.launch(context.Background(), c.pick)
				o := outcome{start: start, end: time.Now()}
				if err != nil {
					o.reason = err.Error()
				}
				l.mu.Lock()
				l.outcomes = append(l.outcomes, o)
				if err == nil {
					l.recent = append(l.recent, done)
					if len(l.recent) > recentKept {
						l.recent = l.recent[1:]
					}
				}
				l.mu.Unlock()
				if err == nil {
					l.replay(b, done, "right after")
				}
			}
		}()
	}
	return l
}

// halt stops the browsers and waits for their launches in flight.
func (l *load) halt() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.done.Wait()
}

// replay posts a launch again; anything but a refusal is a replay accepted.
func (l *load) replay(b *browser, d launched, when string) {
	accepted, err := b.replay(context.Background(), l.c.pick(), d)
	switch {
	case accepted:
		l.replaysAccepted.Add(1)
		l.mu.Lock()
		l.acceptedReplays = append(l.acceptedReplays, when)
		l.mu.Unlock()
	case err != nil:
		l.replaysFailed.Add(1) // no answer: nothing accepted
	default:
		l.replaysRefused.Add(1)
	}
}

// lastLaunches are the last successful launches now (those just before a fault strikes).
func (l *load) lastLaunches() []launched {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recent)
}

// replayAll replays list (the launches just before a fault, after it).
func (l *load) replayAll(list []launched, when string) {
	b := newBrowser(l.c)
	for _, d := range list {
		l.replay(b, d, when)
	}
}

// accepted counts the replays wrongly accepted so far by when they were sent.
func (l *load) accepted() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	count := map[string]int{}
	for _, when := range l.acceptedReplays {
		count[when]++
	}
	var parts []string
	for when, n := range count {
		parts = append(parts, fmt.Sprintf("%d× %s", n, when))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// between returns the outcomes of launches started in [from, to).
func (l *load) between(from, to time.Time) []outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []outcome
	for _, o := range l.outcomes {
		if !o.start.Before(from) && o.start.Before(to) {
			out = append(out, o)
		}
	}
	return out
}

// succeededAfter says whether a launch started at or after t has succeeded, and when it ended.
func (l *load) succeededAfter(t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.outcomes) - 1; i >= 0; i-- {
		o := l.outcomes[i]
		if o.reason == "" && !o.start.Before(t) {
			return o.end, true
		}
	}
	return time.Time{}, false
}

// total counts every launch so far, and the failed ones.
func (l *load) total() (n, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.outcomes {
		if o.reason != "" {
			failed++
		}
	}
	return len(l.outcomes), failed
}

// browser plays one user's browser and the LMS's part of the launch.
type browser struct {
	c    *cluster
	http *http.Client
}

var browsers atomic.Uint64

func newBrowser(c *cluster) *browser {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	return &browser{c: c, http: &http.Client{
		Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// launch is one complete launch: GET /lti/login, the LMS signs the id_token for its
// nonce, POST /lti/launch with the binding cookie, and GET /api/idtoken with the ltik, each
// request to the replica pick names when it is sent (as behind a round-robin Service).
func (b *browser) launch(ctx context.Context, pick func() string) (launched, error) {
	user := "student-" + strconv.FormatUint(browsers.Add(1), 10)
	target := publicURL + paths.Launch
	hint, _ := json.Marshal(map[string]string{"message": "", "target": target})
	login := url.Values{"iss": {b.c.lms.Issuer}, "login_hint": {user}, "target_link_uri": {target},
		"client_id": {clientID}, "lti_deployment_id": {deployment}, "lti_message_hint": {string(hint)}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, pick()+paths.Login+"?"+login.Encode(), nil)
	res, err := b.do(req, http.StatusFound) //nolint:bodyclose // do closes it
	if err != nil {
		return launched{}, fmt.Errorf("login: %w", err)
	}
	auth, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		return launched{}, fmt.Errorf("login: %w", err)
	}
	q := auth.Query()
	token, err := b.c.lms.Sign(b.c.lms.Claims(user, q.Get("nonce"), target), nil)
	if err != nil {
		return launched{}, err
	}
	d := launched{form: url.Values{"id_token": {token}, "state": {q.Get("state")}}, cookies: res.Cookies()}
	res, err = b.post(ctx, pick(), d, http.StatusSeeOther) //nolint:bodyclose // do closes it
	if err != nil {
		return launched{}, fmt.Errorf("launch: %w", err)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	ltik := ""
	if loc != nil {
		ltik = loc.Query().Get("ltik")
	}
	if ltik == "" {
		return launched{}, fmt.Errorf("launch: no ltik in %q", res.Header.Get("Location"))
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, pick()+"/api/idtoken", nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+apiKey+":"+ltik)
	if _, err := b.do(req, http.StatusOK); err != nil { //nolint:bodyclose // do closes it
		return launched{}, fmt.Errorf("idtoken: %w", err)
	}
	return d, nil
}

// replay posts d's launch again at at: accepted reports a 303 with an ltik.
func (b *browser) replay(ctx context.Context, at string, d launched) (accepted bool, err error) {
	res, err := b.post(ctx, at, d, http.StatusSeeOther) //nolint:bodyclose // do closes it
	var status *statusError
	switch {
	case err == nil:
		loc, _ := url.Parse(res.Header.Get("Location"))
		return loc != nil && loc.Query().Get("ltik") != "", nil
	case errors.As(err, &status):
		return false, nil // refused
	default:
		return false, err
	}
}

func (b *browser) post(ctx context.Context, at string, d launched, want int) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, at+paths.Launch, strings.NewReader(d.form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range d.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value}) //nolint:gosec // G124: a cookie sent back, not set
	}
	return b.do(req, want)
}

// statusError is an answer other than the one expected: its status and error code.
type statusError struct {
	status int
	code   string
}

func (e *statusError) Error() string { return strconv.Itoa(e.status) + " " + e.code }

// do sends req asking for JSON errors and checks the status; the body is read so the
// connection is reused.
func (b *browser) do(req *http.Request, want int) (*http.Response, error) {
	req.Header.Set("Accept", "application/json")
	res, err := b.http.Do(req)
	if err != nil {
		return nil, transportReason(err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 8192))
	res.Body.Close()
	if res.StatusCode != want {
		var envelope struct {
			Details struct {
				Message string `json:"message"`
			} `json:"details"`
		}
		code := "(no error envelope)"
		if json.Unmarshal(body, &envelope) == nil && envelope.Details.Message != "" {
			code = envelope.Details.Message
		}
		return nil, &statusError{status: res.StatusCode, code: code}
	}
	return res, nil
}

// transportReason names a failure to get an answer at all: what a killed process gives.
func transportReason(err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New(reasonRefused)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New(reasonReset)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timeout")
	}
	return err
}

const (
	reasonRefused = "connection refused"
	reasonReset   = "connection reset"
)

// isTransport says whether a failed launch got no answer from its replica (it was killed,
// or not yet out of the Service's endpoints).
func isTransport(reason string) bool {
	return strings.HasSuffix(reason, reasonRefused) || strings.HasSuffix(reason, reasonReset)
}

// reasons counts the failures of outcomes by reason, most frequent first.
func reasons(outcomes []outcome) string {
	count := map[string]int{}
	for _, o := range outcomes {
		if o.reason != "" {
			count[o.reason]++
		}
	}
	var keys []string
	for k := range count {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return count[b] - count[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", count[k], k))
	}
	return strings.Join(parts, "; ")
}

// freeAddr is a loopback address with a port free now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:1" // nothing listens there: the replica's start fails and says so
	}
	defer l.Close()
	return l.Addr().String()
}
