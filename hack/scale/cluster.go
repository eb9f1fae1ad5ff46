package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// waitAllReady waits until n registrations have Ready=True for their generation, read
// from the API server in pages of 500.
func waitAllReady(ctx context.Context, k8s client.Client, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	lastSaid := time.Now()
	for {
		ready := 0
		opts := []client.ListOption{client.InNamespace(namespace), client.Limit(500)}
		for cont := ""; ; {
			var list ltiv1.PlatformRegistrationList
			countOwn("LIST platformregistrations")
			if err := k8s.List(ctx, &list, append(opts, client.Continue(cont))...); err != nil {
				return err
			}
			for _, r := range list.Items {
				c := meta.FindStatusCondition(r.Status.Conditions, ltiv1.ConditionReady)
				if c != nil && c.Status == "True" && c.ObservedGeneration == r.Generation {
					ready++
				}
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d registrations Ready after %v", ready, n, limit)
		}
		if time.Since(lastSaid) > 10*time.Second {
			say("%d of %d registrations Ready", ready, n)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// oneKeySet measures the key set an LMS fetches for one registration: status.jwksUrl when
// it names a key set of its own, else (one shared /lti/keys) the size of its one JWK.
func oneKeySet(ctx context.Context, a *api, k8s client.Client, id string) (int, string, error) {
	var reg ltiv1.PlatformRegistration
	countOwn("GET platformregistrations")
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: id}, &reg); err != nil {
		return 0, "", err
	}
	u, err := url.Parse(reg.Status.JWKSURL)
	if err != nil || reg.Status.JWKSURL == "" {
		return 0, "", fmt.Errorf("registration %s has no status.jwksUrl", id)
	}
	if u.Path != "/lti/keys" || u.RawQuery != "" {
		n, err := a.size(ctx, u.RequestURI())
		return n, "GET status.jwksUrl", err
	}
	_, b, err := a.do(ctx, "GET", "/lti/keys", nil)
	if err != nil {
		return 0, "", err
	}
	var set struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(b, &set); err != nil {
		return 0, "", err
	}
	for _, k := range set.Keys {
		var probe struct{ Kid string }
		if json.Unmarshal(k, &probe) == nil && probe.Kid == reg.Status.KID {
			one, _ := json.Marshal(map[string]any{"keys": []json.RawMessage{k}})
			return len(one), "status.jwksUrl is the shared /lti/keys: {\"keys\":[its JWK]}", nil
		}
	}
	return 0, "", fmt.Errorf("kid %s of %s is not in /lti/keys", reg.Status.KID, id)
}

// stored is what the registrations take in the API server.
type stored struct{ registrations, secrets, bytes int }

func (s stored) String() string {
	return fmt.Sprintf("%d registrations + %d Secrets, %s", s.registrations, s.secrets, kib(s.bytes))
}

// storedBytes sums the JSON size of the registrations and ltiop's Secrets.
func storedBytes(ctx context.Context, k8s client.Client) (stored, error) {
	var s stored
	var regs ltiv1.PlatformRegistrationList
	countOwn("LIST platformregistrations")
	if err := k8s.List(ctx, &regs, client.InNamespace(namespace)); err != nil {
		return s, err
	}
	for i := range regs.Items {
		b, _ := json.Marshal(&regs.Items[i])
		s.registrations++
		s.bytes += len(b)
	}
	var secrets corev1.SecretList
	countOwn("LIST secrets")
	if err := k8s.List(ctx, &secrets, client.InNamespace(namespace),
		client.MatchingLabels{ltiv1.LabelManagedBy: ltiv1.ManagedByValue}); err != nil {
		return s, err
	}
	for i := range secrets.Items {
		b, _ := json.Marshal(&secrets.Items[i])
		s.secrets++
		s.bytes += len(b)
	}
	return s, nil
}

// apiServerMetrics reads the API server's request counters.
type apiServerMetrics struct{ cfg *rest.Config }

// requestCounts are apiserver_request_total by "VERB resource", and the watch events
// and bytes sent, by watchEvents or watchBytes + resource.
type requestCounts map[string]float64

// requestLine matches the counters read: requests by verb, and the events (and their bytes)
// that watches sent, which is how informers list since WatchList streams the initial list.
var requestLine = regexp.MustCompile(`^(apiserver_request_total|apiserver_watch_events_total|apiserver_watch_events_sizes_sum)\{(.*)\} ([0-9.e+]+)$`)
var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

func (m apiServerMetrics) requests(ctx context.Context) (snapshot, error) {
	own.Lock()
	mine := maps.Clone(own.counts)
	own.Unlock()
	server, err := m.counters(ctx)
	return snapshot{server: server, own: mine}, err
}

func (m apiServerMetrics) counters(ctx context.Context) (requestCounts, error) {
	c, err := rest.HTTPClientFor(m.cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(m.cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return nil, err
	}
	out := requestCounts{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mm := requestLine.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(mm[2], -1) {
			labels[l[1]] = l[2]
		}
		switch labels["resource"] {
		case "platformregistrations", "secrets", "events", "leases", "toolregistrations":
		default:
			continue
		}
		name := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			name += "/" + labels["subresource"]
		}
		switch mm[1] {
		case "apiserver_watch_events_total":
			name = watchEvents + labels["resource"]
		case "apiserver_watch_events_sizes_sum":
			name = watchBytes + labels["resource"]
		}
		v, _ := strconv.ParseFloat(mm[3], 64)
		out[name] += v
	}
	return out, sc.Err()
}

const (
	watchEvents = "watch events: "
	watchBytes  = "watch bytes: "
)

// snapshot is the API server's request counters at one time, with this program's own
// LIST requests up to then, so that a delta leaves them out.
type snapshot struct{ server, own requestCounts }

// minus is what ltiop asked of the API server between before and s.
func (s snapshot) minus(before snapshot) requestCounts {
	out := requestCounts{}
	for k, v := range s.server {
		if d := v - before.server[k] - (s.own[k] - before.own[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// own counts this program's own requests: its LISTs, and the writes of -direct.
var own = struct {
	sync.Mutex
	counts requestCounts
}{counts: requestCounts{}}

func countOwn(request string) {
	own.Lock()
	own.counts[request]++
	own.Unlock()
}
