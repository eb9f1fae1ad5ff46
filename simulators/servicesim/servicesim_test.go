package servicesim_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ltiop/ltiop/simulators/servicesim"
)

func TestRoundRobinAlternatesAndKeepsTheHost(t *testing.T) {
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.Host)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b := backend("a"), backend("b")
	rr, err := servicesim.NewRoundRobin(a.URL, b.URL)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(rr)
	t.Cleanup(front.Close)

	get := func() string {
		req, _ := http.NewRequest("GET", front.URL, nil)
		req.Host = "lti.example.edu"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	for i, want := range []string{"a lti.example.edu", "b lti.example.edu", "a lti.example.edu"} {
		if got := get(); got != want {
			t.Errorf("request %d reached %q, want %q", i, got, want)
		}
	}
}
