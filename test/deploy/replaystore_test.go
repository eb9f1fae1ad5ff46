package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
	"github.com/ltiop/ltiop/test/utils/testredis"
)

// loadRendered loads ltiop's configuration as the rendered pod would: the config file, if
// the chart renders one, and the environment's literal values (Secrets are not read).
func loadRendered(t *testing.T, objs testmanifests.Objects) (*config.Config, error) {
	t.Helper()
	c := ltiopContainer(t, objs)
	var args []string
	if cm := objs.Find("ConfigMap", "ltiop-config"); cm != nil {
		file := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(file, []byte(nested(t, cm, "data", "config.yaml").(string)), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config="+file)
	}
	env := map[string]string{"LTIOP_NAMESPACE": chartNamespace}
	for _, e := range c["env"].([]any) {
		if v, ok := e.(map[string]any)["value"].(string); ok {
			env[e.(map[string]any)["name"].(string)] = v
		}
	}
	return config.Load(args, func(n string) string { return env[n] })
}

// The chart's HA example (docs/install.md, Redis Sentinel) leaves waitReplicas at its
// default, and the pods it renders then confirm each use on a replica (issue #34); 0
// turns it off for good, a number is passed on, and the chart refuses what would refuse
// every launch or what ltiop would not start with.
func TestChartReplayStoreWaitReplicas(t *testing.T) {
	sentinel := func(wait any) map[string]any {
		rs := map[string]any{"url": "redis:///0", "passwordSecret": map[string]any{"name": "redis", "key": "password"},
			"sentinel": map[string]any{"masterName": "mymaster",
				"addrs": []any{"redis-sentinel-0.redis:26379", "redis-sentinel-1.redis:26379", "redis-sentinel-2.redis:26379"}}}
		if wait != nil {
			rs["waitReplicas"] = wait
		}
		return map[string]any{"replicas": 3, "replayStore": rs}
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   int
	}{
		{"the Sentinel example, waitReplicas left alone", sentinel(nil), 1},
		{"the Sentinel example, waitReplicas auto", sentinel("auto"), 1},
		{"the Sentinel example, waitReplicas 0 (off)", sentinel(0), 0},
		{"the Sentinel example, waitReplicas 2", sentinel(2), 2},
		{"one external Redis", map[string]any{"replayStore": map[string]any{"url": "redis://redis:6379/0"}}, 0},
		{"one external Redis with replicas behind it, waitReplicas 1", map[string]any{"replayStore": map[string]any{"url": "redis://redis:6379/0", "waitReplicas": 1}}, 1},
		{"the chart's Redis", map[string]any{"replicas": 3, "replayStore": map[string]any{"redis": map[string]any{"enabled": true}}}, 0},
		{"the chart's Redis, waitReplicas 0", map[string]any{"replayStore": map[string]any{"redis": map[string]any{"enabled": true}, "waitReplicas": 0}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadRendered(t, render(t, tc.values))
			if err != nil {
				t.Fatalf("ltiop refuses the rendered configuration: %v", err)
			}
			if got := cfg.ReplayWaitReplicas(); got != tc.want {
				t.Errorf("the pods wait for %d replicas, want %d", got, tc.want)
			}
		})
	}
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"a word":                        {sentinel("always"), "waitReplicas"},
		"17 replicas":                   {sentinel(17), "waitReplicas"},
		"negative":                      {sentinel(-1), "waitReplicas"},
		"the chart's Redis, WAIT 1":     {map[string]any{"replayStore": map[string]any{"redis": map[string]any{"enabled": true}, "waitReplicas": 1}}, "no replica to confirm a use"},
		"the chart's Redis, WAIT \"2\"": {map[string]any{"replayStore": map[string]any{"redis": map[string]any{"enabled": true}, "waitReplicas": "2"}}, "waitReplicas"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			tc.values["publicUrl"] = "https://lti.example.com"
			if _, err := renderChart(tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// The chart's Redis keeps every use it acknowledged across a restart of its container
// (issue #34: a node test replayed 5 launches from before a Redis kill and all 5 were
// accepted). The rendered container's own arguments run a real redis-server whose data
// directory stands for the pod's data volume (an emptyDir: it outlives the container, not
// the pod); uses are recorded through ltiop's store, the server is killed with SIGKILL and
// started again with the same arguments and directory, and the same uses are refused.
func TestChartRedisKeepsUsesAcrossARestart(t *testing.T) {
	objs := render(t, map[string]any{"replicas": 3, "replayStore": map[string]any{"redis": map[string]any{"enabled": true}}})
	deploy := objs.Find("Deployment", "ltiop-redis")
	spec := nested(t, deploy, "spec", "template", "spec").(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	// The data directory is the data volume, an emptyDir.
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]any) {
		mounts[m.(map[string]any)["name"].(string)] = m.(map[string]any)["mountPath"].(string)
	}
	dir := slices.Index(args, "--dir")
	if dir < 0 { // the working directory of the redis image
		args = append(args, "--dir", "/data")
		dir = len(args) - 2
	}
	if dir+1 >= len(args) || args[dir+1] != mounts["data"] {
		t.Fatalf("the Redis data directory is not the data volume (%v): args %q", mounts, args)
	}
	for _, v := range spec["volumes"].([]any) {
		if v := v.(map[string]any); v["name"] == "data" && v["emptyDir"] == nil {
			t.Errorf("the data volume is not an emptyDir: %v", v)
		}
	}

	const password = "chart-redis-password"
	volume := t.TempDir()
	args[dir+1] = volume
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(REDIS_PASSWORD)", password)
	}
	srv := testredis.Start(t, testredis.WithArgs(args...))
	srv.Password = password // for testredis's PING
	store, err := replay.NewRedis(replay.RedisOptions{URL: srv.URL, Password: password, KeyPrefix: "ltiop:" + chartNamespace + ":", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	now := time.Now()
	const uses = 50
	for i := range uses {
		if first, err := store.Use(ctx, "state-"+strconv.Itoa(i), now.Add(10*time.Minute), now); err != nil || !first {
			t.Fatalf("use %d: first=%v err=%v", i, first, err)
		}
	}

	srv.Restart() // SIGKILL, then the same command line and directory: the container's restart
	accepted := 0
	for i := range uses {
		first, err := store.Use(ctx, "state-"+strconv.Itoa(i), now.Add(10*time.Minute), now)
		if err != nil {
			t.Fatalf("use %d after the restart: %v", i, err)
		}
		if first {
			accepted++
		}
	}
	if accepted > 0 {
		t.Errorf("%d of %d uses recorded before the restart were accepted again after it", accepted, uses)
	}
}
