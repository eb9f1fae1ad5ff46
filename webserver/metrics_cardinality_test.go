package webserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// The attack of issue #28 item 1: an anonymous client sends requests with methods of its
// own making (any token is a valid method to net/http). Each distinct method must not become
// a metric series: the label takes a fixed set of values.
func TestMetricsMethodLabelFloodMakesNoNewSeries(t *testing.T) {
	srv := webserver.New(webserver.Options{Listen: "127.0.0.1:0", MaxBodyBytes: 1 << 20},
		webserver.Handlers{APIKey: httpapi.NewAPIKey("s", "k"), Keys: http.NotFoundHandler(), KeySet: http.NotFoundHandler()})
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { _ = srv.Start(ctx) }()
	addr, err := srv.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	const attempts = 50
	for i := range attempts {
		method := fmt.Sprintf("FLOOD%06dXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", i)
		for _, path := range []string{"/lti/keys", "/no/such/route"} {
			if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\n\r\n", method, path); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
	}

	allowed := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range families {
		if f.GetName() != "ltiop_http_requests_total" {
			continue
		}
		found = true
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && !slices.Contains(allowed, l.GetValue()) {
					t.Fatalf("a series with method %.40q: a client's method became a label value", l.GetValue())
				}
			}
		}
	}
	if !found {
		t.Fatal("ltiop_http_requests_total not gathered")
	}
}
