package webserver_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// On stop, /readyz fails at once while requests are still served for DrainDelay; then the
// listener closes, and a request in flight finishes.
func TestStopDrainsBeforeClosing(t *testing.T) {
	const drain = 600 * time.Millisecond
	slow := make(chan struct{})
	srv := webserver.New(webserver.Options{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20, DrainDelay: drain, ShutdownTimeout: 5 * time.Second},
		webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-slow // a request in flight across the whole shutdown
			_, _ = w.Write([]byte(`{"keys":[]}`))
		}), KeySet: http.NotFoundHandler()})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Start(ctx) }()
	addr, err := srv.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr
	if got := status(t, base+"/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz before stopping: %d", got)
	}
	inFlight := make(chan int, 1)
	go func() {
		res, err := http.Get(base + "/lti/keys")
		if err != nil {
			inFlight <- 0
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		inFlight <- res.StatusCode
	}()
	time.Sleep(50 * time.Millisecond) // let the slow request reach the handler

	stop()
	begun := time.Now()
	waitFor(t, func() bool { return status(t, base+"/readyz") == http.StatusServiceUnavailable })
	if time.Since(begun) >= drain {
		t.Fatalf("/readyz took %s to fail, longer than the drain", time.Since(begun))
	}
	if got := status(t, base+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want still served", got)
	}
	waitFor(t, func() bool { _, err := http.Get(base + "/healthz"); return err != nil })
	if elapsed := time.Since(begun); elapsed < drain {
		t.Errorf("the listener closed after %s, before the %s drain", elapsed, drain)
	}
	close(slow)
	if got := <-inFlight; got != http.StatusOK {
		t.Errorf("the request in flight ended with %d, want 200", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Start: %v", err)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
