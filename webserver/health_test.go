package webserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

type verboseReadiness struct {
	Status string `json:"status"`
	Checks []struct {
		Name    string `json:"name"`
		Ready   bool   `json:"ready"`
		Waiting string `json:"waiting"`
	} `json:"checks"`
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, body)
		}
	}
	return res.StatusCode
}

// /livez answers 200 while the process serves; /readyz?verbose names every check, ready or
// not, and the shutdown, with the same status as /readyz.
func TestLivezAndVerboseReadyz(t *testing.T) {
	var keysLoaded atomic.Bool
	srv := webserver.New(webserver.Options{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20, DrainDelay: time.Minute, ShutdownTimeout: 5 * time.Second},
		webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.NotFoundHandler(), KeySet: http.NotFoundHandler()},
		webserver.ReadinessCheck{Name: "registrations", Ready: func() bool { return true }, Waiting: "Registrations are still loading."},
		webserver.ReadinessCheck{Name: "sealing-keys", Ready: keysLoaded.Load, Waiting: "The sealing keys are not loaded yet."},
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = srv.Start(ctx) }()
	addr, err := srv.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr

	var live map[string]string
	if code := getJSON(t, base+"/livez", &live); code != http.StatusOK || live["status"] != "ok" {
		t.Errorf("/livez: %d %v", code, live)
	}

	var v verboseReadiness
	if code := getJSON(t, base+"/readyz?verbose", &v); code != http.StatusServiceUnavailable || v.Status != "not ready" {
		t.Errorf("/readyz?verbose while a check fails: %d %q", code, v.Status)
	}
	if len(v.Checks) != 3 || v.Checks[0].Name != "registrations" || !v.Checks[0].Ready ||
		v.Checks[1].Name != "sealing-keys" || v.Checks[1].Ready || v.Checks[1].Waiting != "The sealing keys are not loaded yet." ||
		v.Checks[2].Name != "shutdown" || !v.Checks[2].Ready {
		t.Errorf("/readyz?verbose checks: %+v", v.Checks)
	}
	// The plain /readyz says only the first failing check, as before.
	if code := getJSON(t, base+"/readyz", nil); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while a check fails: %d", code)
	}

	keysLoaded.Store(true)
	v = verboseReadiness{}
	if code := getJSON(t, base+"/readyz?verbose=1", &v); code != http.StatusOK || v.Status != "ready" || len(v.Checks) != 3 {
		t.Errorf("/readyz?verbose when ready: %d %+v", code, v)
	}
	for _, c := range v.Checks {
		if !c.Ready || c.Waiting != "" {
			t.Errorf("check %+v, want ready", c)
		}
	}

	// From the start of shutdown the shutdown check fails; /livez is still served.
	stop()
	waitFor(t, func() bool { return status(t, base+"/readyz") == http.StatusServiceUnavailable })
	v = verboseReadiness{}
	if code := getJSON(t, base+"/readyz?verbose", &v); code != http.StatusServiceUnavailable || v.Checks[2].Ready || v.Checks[2].Waiting == "" {
		t.Errorf("/readyz?verbose while draining: %d %+v", code, v)
	}
	if code := getJSON(t, base+"/livez", nil); code != http.StatusOK {
		t.Errorf("/livez while draining: %d", code)
	}
}
