package node_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/ltiop/ltiop/test/utils/testhttp"
)

// loadReport counts what the launches sent during one scenario came to.
type loadReport struct {
	scenario        string
	launches        int
	ok              int
	failedClosed    map[string]int // 503 answers, by error code: refused, nothing accepted
	failedOther     map[string]int // anything else, by status and start of body
	replaysTried    int
	replaysAccepted int
	// recent successful launches, with the browser that made them, to replay later.
	recent []replayable
}

type replayable struct {
	b *browser
	a launchAttempt
}

func (r *loadReport) String() string {
	return fmt.Sprintf("%s: %d launches, %d ok, %d failed closed %v, %d failed otherwise %v; replays: %d tried, %d accepted",
		r.scenario, r.launches, r.ok, sum(r.failedClosed), r.failedClosed, sum(r.failedOther), r.failedOther, r.replaysTried, r.replaysAccepted)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// refusalCode is the error code of a 503 answer (the JSON envelope or ltiop's HTML error
// page), or "" when the answer is not such a refusal.
func refusalCode(a launchAttempt) string {
	if a.status != 503 {
		return ""
	}
	return testhttp.RefusalCode(testhttp.Reply{Status: a.status, Body: a.body})
}

// load sends launches from workers simulated browsers, each launch followed at once by a
// replay of its id_token form with the cookies it was sent with (which must be refused),
// until stop is called. Its count of
// launches is bounded: at most 10 per second per worker.
type load struct {
	report loadReport
	mu     sync.Mutex
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func startLoad(scenario string, ca *lmsCA, lms *lmsServer, base string, workers int) *load {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	l := &load{report: loadReport{scenario: scenario, failedClosed: map[string]int{}, failedOther: map[string]int{}}, cancel: cancel}
	for w := range workers {
		l.done.Add(1)
		go func() {
			defer GinkgoRecover()
			defer l.done.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ctx.Err() == nil; i++ {
				b := newBrowser(ca, base, appURL)
				a := b.launch(lms, fmt.Sprintf("user=student-%d-%d", w, i))
				var replay launchAttempt
				if a.ltik != "" {
					replay = b.replay(a)
				}
				l.record(b, a, replay)
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	return l
}

func (l *load) record(b *browser, a, replay launchAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.report
	r.launches++
	switch {
	case a.ltik != "":
		r.ok++
		r.replaysTried++
		if replay.ltik != "" {
			r.replaysAccepted++
		}
		r.recent = append(r.recent, replayable{b, a})
		if len(r.recent) > 20 {
			r.recent = r.recent[1:]
		}
	case refusalCode(a) != "":
		r.failedClosed[refusalCode(a)]++
	case a.status == 0: // no answer: the error, without the URL that differs every time
		msg := a.body
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		r.failedOther["no answer: "+msg]++
	default:
		body := strings.Join(strings.Fields(a.body), " ")
		if len(body) > 80 {
			body = body[:80]
		}
		r.failedOther[fmt.Sprintf("%d %s", a.status, body)]++
	}
}

// succeeded is the number of successful launches so far.
func (l *load) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.report.ok
}

// snapshot is the report so far.
func (l *load) snapshot() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.report.String()
}

// stop ends the load and returns its report, also written to the spec's output.
func (l *load) stop() loadReport {
	l.cancel()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	GinkgoWriter.Println(l.report.String())
	AddReportEntry(l.report.scenario, l.report.String())
	return l.report
}

// replayAll posts again the id_token forms of earlier successful launches, with the cookies
// their browsers had, and returns how many ltiop accepted (it must accept none).
func replayAll(launches []replayable) (tried, accepted int, failures []string) {
	for _, r := range launches {
		got := r.b.replay(r.a)
		tried++
		if got.ltik != "" {
			accepted++
		} else if got.status == 0 {
			failures = append(failures, got.body)
		}
	}
	sort.Strings(failures)
	return tried, accepted, failures
}
