package toolmode_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ltiop/ltiop/test/utils/testcpu"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
)

// BenchmarkLoginLaunchRoundTrip: the whole login + launch over loopback HTTP. The
// "server-µs/op" metric is the time spent inside ltiop's handlers.
func BenchmarkLoginLaunchRoundTrip(b *testing.B) { benchLoginLaunch(b, newRig(b)) }

// BenchmarkLoginLaunchRoundTripRedis: the same with the replay store on a loopback
// redis-server, as several replicas run it; "server-µs/op" against the memory store's is
// the cost of sharing single use.
func BenchmarkLoginLaunchRoundTripRedis(b *testing.B) {
	rg, _ := newRedisRig(b)
	benchLoginLaunch(b, rg)
}

// benchLoginLaunch reports, beside the time, "server-µs/op" (wall time inside ltiop's
// handlers, waits on the replay store included) and "cpu-µs/op" (CPU time of this whole
// process: browser, LMS simulator and ltiop; a redis-server is another process). Between
// two rigs that differ only in the replay store, the cpu-µs/op difference is ltiop's.
func benchLoginLaunch(b *testing.B, rg *rig) {
	client := benchClient()
	rg.launch(b, client) // warm the key-set cache
	rg.server.Store(0)
	b.ReportAllocs()
	cpu := testcpu.Process()
	b.ResetTimer()
	for b.Loop() {
		if rg.launch(b, client) == "" {
			b.Fatal("no ltik")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rg.server.Load())/float64(b.N)/1e3, "server-µs/op")
	b.ReportMetric(float64(testcpu.Process()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkIDToken: GET /api/idtoken, from the Authorization header to the JSON body, for
// an ltik already opened on this replica (the common case: one launch, several calls).
func BenchmarkIDToken(b *testing.B) {
	rg := newRig(b)
	ltik := rg.launch(b, benchClient())
	h := rg.tool.RequireLtik(http.HandlerFunc(rg.tool.IDToken))
	req := httptest.NewRequest("GET", "/api/idtoken", nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+benchAPIKey+":"+ltik)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}

// BenchmarkIDTokenCold: GET /api/idtoken for an ltik this replica has not opened yet
// (decrypt, inflate and parse the claims on every call).
func BenchmarkIDTokenCold(b *testing.B) {
	rg := newRig(b)
	ltik := rg.launch(b, benchClient())
	h := rg.tool.RequireLtik(http.HandlerFunc(rg.tool.IDToken))
	req := httptest.NewRequest("GET", "/api/idtoken", nil)
	req.Header.Set("Authorization", "LTIK-AUTH-V2 "+benchAPIKey+":"+ltik)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		toolmode.ForgetOpenedLtiks(rg.tool)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}
