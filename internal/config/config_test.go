package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
)

// env is a map-backed getenv.
type env map[string]string

func (e env) get(name string) string { return e[name] }

// base is the smallest environment that validates.
func base() env {
	return env{"LTIOP_NAMESPACE": "ltiop", "LTIOP_PUBLIC_URL": "https://lti.example.com"}
}

func (e env) with(kv ...string) env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// isolate keeps the real environment out of Default(): POD_NAMESPACE is read from it.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("POD_NAMESPACE", "")
}

func writeYAML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ltiop.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoad(t *testing.T, args []string, e env) *config.Config {
	t.Helper()
	cfg, err := config.Load(args, e.get)
	if err != nil {
		t.Fatalf("Load(%q) = %v", args, err)
	}
	return cfg
}

func TestLoadDefaults(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, nil, base())
	want := config.Config{
		Namespace:                 "ltiop",
		PublicURL:                 "https://lti.example.com",
		Listen:                    ":3000",
		MetricsListen:             ":8080",
		APIKeySecret:              "ltiop-api-key",
		APIKeySecretKey:           "apiKey",
		MaxBodyBytes:              1 << 20,
		KeyWait:                   config.Duration{Duration: 10 * time.Second},
		ReachabilityProbeInterval: config.Duration{Duration: 15 * time.Minute},
		ClockSkew:                 config.Duration{Duration: time.Minute},
		ServiceSecret:             "ltiop-service",
		ToolName:                  "ltiop", CanvasPrivacyLevel: "public",
		ShutdownTimeout:    config.Duration{Duration: 15 * time.Second},
		ShutdownDelay:      config.Duration{Duration: 5 * time.Second},
		ServiceKeyLifetime: config.Duration{Duration: 90 * 24 * time.Hour},
		ReplayStore:        "memory", ReplayStoreTimeout: config.Duration{Duration: 100 * time.Millisecond},
		LogLevel: "info", LogFormat: "json",
		RateLimits: config.RateLimits{
			Launch:            config.RateLimit{Rate: 100, Burst: 2000},
			Register:          config.RateLimit{Rate: 1, Burst: 30},
			PlatformAuthorize: config.RateLimit{Rate: 50, Burst: 1000},
			PlatformToken:     config.RateLimit{Rate: 20, Burst: 400},
			OAuth:             config.RateLimit{Rate: 10, Burst: 400},
		},
		DynamicRegistration: config.DynamicRegistration{MaxPending: 50, PendingExpiry: config.Duration{Duration: 7 * 24 * time.Hour},
			TokenSecret: "ltiop-registration-token", TokenSecretKey: "token"},
	}
	withNoticeDefaults(&want)
	if !reflect.DeepEqual(*cfg, want) {
		t.Errorf("Load with only the required settings:\n got %+v\nwant %+v", *cfg, want)
	}
}

func TestDefaultNamespaceFromPod(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "from-pod")
	if got := config.Default().Namespace; got != "from-pod" {
		t.Errorf("Default().Namespace = %q, want POD_NAMESPACE", got)
	}
	cfg := mustLoad(t, nil, env{"LTIOP_PUBLIC_URL": "https://lti.example.com"})
	if cfg.Namespace != "from-pod" {
		t.Errorf("Load without a namespace setting: Namespace = %q, want from-pod", cfg.Namespace)
	}
	cfg = mustLoad(t, []string{"--namespace", "explicit"}, env{"LTIOP_PUBLIC_URL": "https://lti.example.com"})
	if cfg.Namespace != "explicit" {
		t.Errorf("--namespace does not override POD_NAMESPACE: %q", cfg.Namespace)
	}
}

func TestLoadPrecedence(t *testing.T) {
	isolate(t)
	fileListen := writeYAML(t, "listen: \":3001\"\n")
	otherFile := writeYAML(t, "listen: \":3005\"\n")
	tests := []struct {
		name string
		args []string
		env  env
		want string
	}{
		{name: "default", env: base(), want: ":3000"},
		{name: "file via --config", args: []string{"--config", fileListen}, env: base(), want: ":3001"},
		{name: "file via LTIOP_CONFIG", env: base().with("LTIOP_CONFIG", fileListen), want: ":3001"},
		{name: "--config beats LTIOP_CONFIG", args: []string{"--config=" + otherFile}, env: base().with("LTIOP_CONFIG", fileListen), want: ":3005"},
		{name: "env beats file", env: base().with("LTIOP_CONFIG", fileListen, "LTIOP_LISTEN", ":3002"), want: ":3002"},
		{name: "env beats default", env: base().with("LTIOP_LISTEN", ":3002"), want: ":3002"},
		{name: "flag beats env and file", args: []string{"--listen", ":3003"}, env: base().with("LTIOP_CONFIG", fileListen, "LTIOP_LISTEN", ":3002"), want: ":3003"},
		{name: "flag beats file", args: []string{"--config", fileListen, "-listen=:3003"}, env: base(), want: ":3003"},
		{name: "flag equal to the default still beats env", args: []string{"--listen", ":3000"}, env: base().with("LTIOP_LISTEN", ":3002"), want: ":3000"},
		{name: "empty env is unset", env: base().with("LTIOP_CONFIG", fileListen, "LTIOP_LISTEN", ""), want: ":3001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.args, tt.env)
			if cfg.Listen != tt.want {
				t.Errorf("Listen = %q, want %q", cfg.Listen, tt.want)
			}
		})
	}
}

func TestLoadSettingsFromEachSource(t *testing.T) {
	isolate(t)
	file := writeYAML(t, `
namespace: from-file
publicUrl: https://file.example.com/
metricsListen: "0"
apiKeySecret: file-secret
apiKeySecretKey: fileKey
launchUrl: https://app.example.com/launch
deepLinkingUrl: https://app.example.com/deep
devMode: false
leaderElection: true
maxBodyBytes: 2048
keyWait: 3s
reachabilityProbeInterval: 30m
shutdownTimeout: 20s
shutdownDelay: 2s
serviceKeyLifetime: 720h
kubeconfig: /file/kubeconfig
replayStore: redis://redis.ltiop.svc:6379/0
replayStorePasswordFile: /etc/ltiop/redis/password
replayStoreKeyPrefix: "ltiop:prod:"
replayStoreTimeout: 150ms
logLevel: debug
logFormat: console
rateLimits:
  launch: {rate: 0}
  register: {rate: 0.5, burst: 5}
trustedProxies: [10.0.0.0/8, "192.0.2.1"]
dynamicRegistration:
  maxPending: 10
  pendingExpiry: 48h
  requireToken: true
  tokenSecret: registration-token
`)
	tests := []struct {
		name  string
		args  []string
		env   env
		check func(t *testing.T, c *config.Config)
	}{
		{
			name: "YAML file",
			args: []string{"--config", file},
			check: func(t *testing.T, c *config.Config) {
				want := config.Config{
					Namespace: "from-file", PublicURL: "https://file.example.com", Listen: ":3000",
					MetricsListen: "0", APIKeySecret: "file-secret", APIKeySecretKey: "fileKey",
					LaunchURL: "https://app.example.com/launch", DeepLinkingURL: "https://app.example.com/deep",
					LeaderElection: true, MaxBodyBytes: 2048,
					KeyWait:                   config.Duration{Duration: 3 * time.Second},
					ReachabilityProbeInterval: config.Duration{Duration: 30 * time.Minute},
					ClockSkew:                 config.Duration{Duration: time.Minute},
					ServiceSecret:             "ltiop-service",
					ToolName:                  "ltiop", CanvasPrivacyLevel: "public",
					ShutdownTimeout:    config.Duration{Duration: 20 * time.Second},
					ShutdownDelay:      config.Duration{Duration: 2 * time.Second},
					ServiceKeyLifetime: config.Duration{Duration: 720 * time.Hour},
					Kubeconfig:         "/file/kubeconfig",
					ReplayStore:        "redis://redis.ltiop.svc:6379/0", ReplayStorePasswordFile: "/etc/ltiop/redis/password",
					ReplayStoreKeyPrefix: "ltiop:prod:", ReplayStoreTimeout: config.Duration{Duration: 150 * time.Millisecond},
					LogLevel: "debug", LogFormat: "console",
					RateLimits: func() config.RateLimits {
						r := config.DefaultRateLimits()
						r.Launch = config.RateLimit{Rate: 0, Burst: 2000} // rate 0: off
						r.Register = config.RateLimit{Rate: 0.5, Burst: 5}
						return r
					}(),
					TrustedProxies: []string{"10.0.0.0/8", "192.0.2.1"},
					DynamicRegistration: config.DynamicRegistration{MaxPending: 10, PendingExpiry: config.Duration{Duration: 48 * time.Hour},
						RequireToken: true, TokenSecret: "registration-token", TokenSecretKey: "token"},
				}
				withNoticeDefaults(&want)
				if !reflect.DeepEqual(*c, want) {
					t.Errorf("\n got %+v\nwant %+v", *c, want)
				}
			},
		},
		{
			name: "environment",
			env: env{
				"LTIOP_NAMESPACE": "from-env", "LTIOP_PUBLIC_URL": "http://localhost:3000",
				"LTIOP_LISTEN": "127.0.0.1:4000", "LTIOP_METRICS_LISTEN": ":9090",
				"LTIOP_API_KEY_SECRET": "env-secret", "LTIOP_API_KEY_SECRET_KEY": "envKey",
				"LTIOP_LAUNCH_URL": "http://localhost:5000/launch", "LTIOP_DEEP_LINKING_URL": "http://localhost:5000/deep",
				"LTIOP_DEV_MODE": "true", "LTIOP_LEADER_ELECT": "1", "LTIOP_MAX_BODY_BYTES": "4096",
				"LTIOP_KEY_WAIT": "4s", "LTIOP_REACHABILITY_PROBE_INTERVAL": "0", "LTIOP_SHUTDOWN_TIMEOUT": "1m", "LTIOP_SHUTDOWN_DELAY": "3s", "KUBECONFIG": "/env/kubeconfig",
				"LTIOP_REPLAY_STORE": "rediss://redis.example:6380/1", "LTIOP_REPLAY_STORE_PASSWORD": "from-secret",
				"LTIOP_REPLAY_STORE_KEY_PREFIX": "env:", "LTIOP_REPLAY_STORE_TIMEOUT": "250ms", "LTIOP_REPLAY_STORE_WAIT_REPLICAS": "1",
				"LTIOP_RATE_LIMIT_LAUNCH": "30/600", "LTIOP_RATE_LIMIT_OAUTH": "0", "LTIOP_TRUSTED_PROXIES": "10.0.0.0/8, fd00::/8",
				"LTIOP_DYNAMIC_REGISTRATION_MAX_PENDING": "7", "LTIOP_DYNAMIC_REGISTRATION_REQUIRE_TOKEN": "true",
				"LTIOP_DYNAMIC_REGISTRATION_TOKEN_SECRET_KEY": "envToken",
				"LTIOP_ENABLE_PPROF":                          "true",
				"LTIOP_LOG_LEVEL":                             "error", "LTIOP_LOG_FORMAT": "console",
			},
			check: func(t *testing.T, c *config.Config) {
				want := config.Config{
					Namespace: "from-env", PublicURL: "http://localhost:3000", Listen: "127.0.0.1:4000",
					MetricsListen: ":9090", Pprof: true, APIKeySecret: "env-secret", APIKeySecretKey: "envKey",
					LaunchURL: "http://localhost:5000/launch", DeepLinkingURL: "http://localhost:5000/deep",
					DevMode: true, LeaderElection: true, MaxBodyBytes: 4096,
					KeyWait:       config.Duration{Duration: 4 * time.Second}, // the probe off: 0
					ClockSkew:     config.Duration{Duration: time.Minute},
					ServiceSecret: "ltiop-service",
					ToolName:      "ltiop", CanvasPrivacyLevel: "public",
					ShutdownTimeout:    config.Duration{Duration: time.Minute},
					ShutdownDelay:      config.Duration{Duration: 3 * time.Second},
					ServiceKeyLifetime: config.Duration{Duration: 90 * 24 * time.Hour},
					Kubeconfig:         "/env/kubeconfig",
					ReplayStore:        "rediss://redis.example:6380/1", ReplayStorePassword: "from-secret",
					ReplayStoreKeyPrefix: "env:", ReplayStoreTimeout: config.Duration{Duration: 250 * time.Millisecond}, ReplayStoreWaitReplicas: config.WaitFor(1),
					LogLevel: "error", LogFormat: "console",
					RateLimits: func() config.RateLimits {
						r := config.DefaultRateLimits()
						r.Launch = config.RateLimit{Rate: 30, Burst: 600}
						r.OAuth = config.RateLimit{}
						return r
					}(),
					TrustedProxies: []string{"10.0.0.0/8", "fd00::/8"},
					DynamicRegistration: func() config.DynamicRegistration {
						d := config.DefaultDynamicRegistration()
						d.MaxPending, d.RequireToken, d.TokenSecretKey = 7, true, "envToken"
						return d
					}(),
				}
				withNoticeDefaults(&want)
				if !reflect.DeepEqual(*c, want) {
					t.Errorf("\n got %+v\nwant %+v", *c, want)
				}
			},
		},
		{
			name: "flags",
			args: []string{
				"--namespace", "from-flag", "--public-url", "http://127.0.0.1:3000/",
				"--listen", ":5000", "--metrics-listen", ":5001", "--metrics-secure",
				"--api-key-secret", "flag-secret", "--api-key-secret-key", "flagKey",
				"--launch-url", "https://app.example.com/l", "--deep-linking-url", "https://app.example.com/d",
				"--dev-mode", "--leader-elect", "--max-body-bytes", "8192",
				"--key-wait", "5s", "--reachability-probe-interval", "1h", "--shutdown-timeout", "30s", "--shutdown-delay", "0s", "--service-key-lifetime", "48h", "--kubeconfig", "/flag/kubeconfig",
				"--replay-store", "redis://10.0.0.7:6379/2", "--replay-store-password-file", "/flag/password",
				"--replay-store-key-prefix", "flag:", "--replay-store-timeout", "80ms",
				"--rate-limit-register", "0", "--rate-limit-platform-authorize", "2.5/50", "--rate-limit-platform-token", "off",
				"--trusted-proxies", "172.16.0.0/12", "--enable-pprof", "--log-level", "debug", "--log-format", "console",
				"--dynamic-registration-max-pending", "20", "--dynamic-registration-pending-expiry", "24h",
				"--dynamic-registration-token-secret", "flag-token",
			},
			env: env{"LTIOP_RATE_LIMIT_PLATFORM_AUTHORIZE": "7/70", "LTIOP_NAMESPACE": "from-env", "LTIOP_KEY_WAIT": "4s", "LTIOP_MAX_BODY_BYTES": "4096"},
			check: func(t *testing.T, c *config.Config) {
				want := config.Config{
					Namespace: "from-flag", PublicURL: "http://127.0.0.1:3000", Listen: ":5000",
					MetricsListen: ":5001", Pprof: true, MetricsSecure: true, APIKeySecret: "flag-secret", APIKeySecretKey: "flagKey",
					LaunchURL: "https://app.example.com/l", DeepLinkingURL: "https://app.example.com/d",
					DevMode: true, LeaderElection: true, MaxBodyBytes: 8192,
					KeyWait:                   config.Duration{Duration: 5 * time.Second},
					ReachabilityProbeInterval: config.Duration{Duration: time.Hour},
					ClockSkew:                 config.Duration{Duration: time.Minute},
					ServiceSecret:             "ltiop-service",
					ToolName:                  "ltiop", CanvasPrivacyLevel: "public",
					ShutdownTimeout:    config.Duration{Duration: 30 * time.Second},
					ServiceKeyLifetime: config.Duration{Duration: 48 * time.Hour},
					Kubeconfig:         "/flag/kubeconfig",
					ReplayStore:        "redis://10.0.0.7:6379/2", ReplayStorePasswordFile: "/flag/password",
					ReplayStoreKeyPrefix: "flag:", ReplayStoreTimeout: config.Duration{Duration: 80 * time.Millisecond},
					LogLevel: "debug", LogFormat: "console",
					RateLimits: func() config.RateLimits {
						r := config.DefaultRateLimits()
						r.Register = config.RateLimit{}
						r.PlatformAuthorize = config.RateLimit{Rate: 2.5, Burst: 50}
						r.PlatformToken = config.RateLimit{}
						return r
					}(),
					TrustedProxies: []string{"172.16.0.0/12"},
					DynamicRegistration: func() config.DynamicRegistration {
						d := config.DefaultDynamicRegistration()
						d.MaxPending, d.PendingExpiry, d.TokenSecret = 20, config.Duration{Duration: 24 * time.Hour}, "flag-token"
						return d
					}(),
				}
				withNoticeDefaults(&want)
				if !reflect.DeepEqual(*c, want) {
					t.Errorf("\n got %+v\nwant %+v", *c, want)
				}
			},
		},
		{
			name: "keyWait: file < env < flag",
			args: []string{"--config", file},
			env:  env{"LTIOP_KEY_WAIT": "4s"},
			check: func(t *testing.T, c *config.Config) {
				if c.KeyWait.Duration != 4*time.Second {
					t.Errorf("KeyWait = %s, want 4s from the environment", c.KeyWait.Duration)
				}
			},
		},
		{
			name: "--dev-mode without value, followed by another flag",
			args: []string{"--dev-mode", "--public-url", "http://localhost:3000", "--namespace", "dev"},
			check: func(t *testing.T, c *config.Config) {
				if !c.DevMode || c.PublicURL != "http://localhost:3000" {
					t.Errorf("DevMode = %v, PublicURL = %q", c.DevMode, c.PublicURL)
				}
			},
		},
		{
			name: "--dev-mode=false beats LTIOP_DEV_MODE",
			args: []string{"--dev-mode=false"},
			env:  base().with("LTIOP_DEV_MODE", "true"),
			check: func(t *testing.T, c *config.Config) {
				if c.DevMode {
					t.Error("DevMode = true, want false from the flag")
				}
			},
		},
		{
			name: "single-dash flags",
			args: []string{"-namespace=single", "-public-url=https://single.example.com"},
			check: func(t *testing.T, c *config.Config) {
				if c.Namespace != "single" || c.PublicURL != "https://single.example.com" {
					t.Errorf("got %+v", *c)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env
			if e == nil {
				e = env{}
			}
			tt.check(t, mustLoad(t, tt.args, e))
		})
	}
}

func TestLoadKeyWaitFlagBeatsEnvAndFile(t *testing.T) {
	isolate(t)
	file := writeYAML(t, "keyWait: 3s\n")
	cfg := mustLoad(t, []string{"--config", file, "--key-wait", "5s"}, base().with("LTIOP_KEY_WAIT", "4s"))
	if cfg.KeyWait.Duration != 5*time.Second {
		t.Errorf("KeyWait = %s, want 5s", cfg.KeyWait.Duration)
	}
	cfg = mustLoad(t, []string{"--config", file}, base())
	if cfg.KeyWait.Duration != 3*time.Second {
		t.Errorf("KeyWait = %s, want 3s", cfg.KeyWait.Duration)
	}
}

func TestLoadTrailingSlashTrimmed(t *testing.T) {
	isolate(t)
	for raw, want := range map[string]string{
		"https://lti.example.com/":       "https://lti.example.com",
		"https://lti.example.com///":     "https://lti.example.com",
		"https://lti.example.com/base/":  "https://lti.example.com/base",
		"https://lti.example.com:8443/x": "https://lti.example.com:8443/x",
	} {
		cfg := mustLoad(t, []string{"--public-url", raw}, base())
		if cfg.PublicURL != want {
			t.Errorf("PublicURL %q loaded as %q, want %q", raw, cfg.PublicURL, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	isolate(t)
	tests := []struct {
		name string
		args []string
		env  env
		file string // YAML content, written to a temporary file passed with --config
		want []string
	}{
		{name: "missing publicUrl", env: env{"LTIOP_NAMESPACE": "ltiop"}, want: []string{"publicUrl: required"}},
		{name: "publicUrl only slashes", env: base().with("LTIOP_PUBLIC_URL", "///"), want: []string{"publicUrl"}},
		{name: "missing namespace", env: env{"LTIOP_PUBLIC_URL": "https://lti.example.com"}, want: []string{"namespace: required"}},
		{name: "http publicUrl without dev mode", env: base().with("LTIOP_PUBLIC_URL", "http://lti.example.com"), want: []string{"publicUrl", "must use https"}},
		{name: "publicUrl with a query", env: base().with("LTIOP_PUBLIC_URL", "https://lti.example.com/?a=b"), want: []string{"publicUrl: must not carry a query or fragment"}},
		{name: "publicUrl with a fragment", env: base().with("LTIOP_PUBLIC_URL", "https://lti.example.com/#x"), want: []string{"publicUrl: must not carry a query or fragment"}},
		{name: "relative publicUrl", env: base().with("LTIOP_PUBLIC_URL", "lti.example.com"), want: []string{"publicUrl", "absolute https URL"}},
		{name: "invalid namespace", args: []string{"--namespace", "Not_Valid"}, env: base(), want: []string{`namespace "Not_Valid"`}},
		{name: "namespace too long", args: []string{"--namespace", strings.Repeat("a", 64)}, env: base(), want: []string{"namespace"}},
		{name: "bad listen address", env: base().with("LTIOP_LISTEN", "3000"), want: []string{`listen "3000"`}},
		{name: "bad metrics address", env: base().with("LTIOP_METRICS_LISTEN", "metrics"), want: []string{`metricsListen "metrics"`}},
		{name: "pprof with the metrics port off", env: base().with("LTIOP_METRICS_LISTEN", "0", "LTIOP_ENABLE_PPROF", "true"),
			want: []string{"pprof: profiles are served on the metrics port, which metricsListen 0 turns off"}},
		{name: "pprof from YAML with the metrics port off", file: "metricsListen: \"0\"\npprof: true\n", env: base(), want: []string{"pprof:"}},
		{name: "maxBodyBytes too small", args: []string{"--max-body-bytes", "1023"}, env: base(), want: []string{"maxBodyBytes: must be at least 1024, got 1023"}},
		{name: "keyWait over a minute", env: base().with("LTIOP_KEY_WAIT", "61s"), want: []string{"keyWait: must be between 0 and 1m"}},
		{name: "keyWait negative", args: []string{"--key-wait=-1s"}, env: base(), want: []string{"keyWait"}},
		{name: "reachabilityProbeInterval too often", env: base().with("LTIOP_REACHABILITY_PROBE_INTERVAL", "30s"), want: []string{"reachabilityProbeInterval: must be 0 (off) or between 1m and 24h, got 30s"}},
		{name: "keyWorkers over 64", env: base().with("LTIOP_KEY_WORKERS", "65"), want: []string{"keyWorkers: must be between 0 (automatic) and 64, got 65"}},
		{name: "keyWorkers negative", args: []string{"--key-workers=-1"}, env: base(), want: []string{"keyWorkers"}},
		{name: "shutdownTimeout zero", env: base().with("LTIOP_SHUTDOWN_TIMEOUT", "0s"), want: []string{"shutdownTimeout: must be positive"}},
		{name: "serviceKeyLifetime shorter than an ltik", env: base().with("LTIOP_SERVICE_KEY_LIFETIME", "1h"), want: []string{"serviceKeyLifetime: must be at least 24h"}},
		{name: "shutdownDelay negative", env: base().with("LTIOP_SHUTDOWN_DELAY", "-1s"), want: []string{"shutdownDelay: must not be negative"}},
		{name: "relative launchUrl", env: base().with("LTIOP_LAUNCH_URL", "/launch"), want: []string{"launchUrl", "absolute https URL"}},
		{name: "http deepLinkingUrl without dev mode", env: base().with("LTIOP_DEEP_LINKING_URL", "http://app.example.com/deep"), want: []string{"deepLinkingUrl", "must use https"}},
		{name: "http submissionReviewUrl without dev mode", env: base().with("LTIOP_SUBMISSION_REVIEW_URL", "http://app.example.com/review"), want: []string{"submissionReviewUrl", "must use https"}},
		{name: "relative submissionReviewUrl", args: []string{"--submission-review-url", "/review"}, env: base(), want: []string{"submissionReviewUrl", "absolute https URL"}},
		{name: "dynamicRegistration.maxPending zero", env: base().with("LTIOP_DYNAMIC_REGISTRATION_MAX_PENDING", "0"), want: []string{"dynamicRegistration.maxPending: must be between 1 and 10000, got 0"}},
		{name: "dynamicRegistration.maxPending not a number", args: []string{"--dynamic-registration-max-pending", "many"}, env: base(), want: []string{"many"}},
		{name: "dynamicRegistration.pendingExpiry too short", env: base().with("LTIOP_DYNAMIC_REGISTRATION_PENDING_EXPIRY", "10s"), want: []string{"dynamicRegistration.pendingExpiry: must be at least 1m"}},
		{name: "invalid dynamicRegistration.tokenSecret", file: "dynamicRegistration: {tokenSecret: Bad_Name}\n", env: base(), want: []string{`dynamicRegistration.tokenSecret "Bad_Name"`}},
		{name: "invalid apiKeySecret", env: base().with("LTIOP_API_KEY_SECRET", "Bad Secret"), want: []string{`apiKeySecret "Bad Secret"`}},
		{name: "unknown YAML key", file: "listen: \":3000\"\nlisten_address: \":3001\"\n", env: base(), want: []string{"configuration file", "listen_address"}},
		{name: "YAML duration as a number", file: "keyWait: 3\n", env: base(), want: []string{"configuration file", "duration"}},
		{name: "YAML bad duration", file: "keyWait: soon\n", env: base(), want: []string{"configuration file", "soon"}},
		{name: "YAML not a mapping", file: "- a\n- b\n", env: base(), want: []string{"configuration file"}},
		{name: "unknown log level", env: base().with("LTIOP_LOG_LEVEL", "warn"), want: []string{`log level "warn": must be debug, info or error`}},
		{name: "log level in capitals", args: []string{"--log-level", "DEBUG"}, env: base(), want: []string{`log level "DEBUG"`}},
		{name: "unknown log format", args: []string{"--log-format", "text"}, env: base(), want: []string{`log format "text": must be json or console`}},
		{name: "YAML empty log format", file: "logFormat: \"\"\n", env: base(), want: []string{`log format ""`}},
		{name: "missing config file", args: []string{"--config", filepath.Join(t.TempDir(), "absent.yaml")}, env: base(), want: []string{"reading configuration file"}},
		{name: "unknown positional argument", args: []string{"--listen", ":3000", "serve"}, env: base(), want: []string{"unexpected arguments: serve"}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, env: base(), want: []string{"no-such-flag"}},
		{name: "bad flag value", args: []string{"--max-body-bytes", "lots"}, env: base(), want: []string{"max-body-bytes"}},
		{name: "bad duration in env", env: base().with("LTIOP_KEY_WAIT", "soon"), want: []string{"LTIOP_KEY_WAIT", "soon"}},
		{name: "bad bool in env", env: base().with("LTIOP_DEV_MODE", "yes please"), want: []string{"LTIOP_DEV_MODE"}},
		{name: "bad number in env", env: base().with("LTIOP_MAX_BODY_BYTES", "1MiB"), want: []string{"LTIOP_MAX_BODY_BYTES"}},
		{name: "replayStore not Redis", env: base().with("LTIOP_REPLAY_STORE", "http://redis:6379"), want: []string{"replayStore: must be memory, redis://"}},
		{name: "replayStore without host", env: base().with("LTIOP_REPLAY_STORE", "redis://"), want: []string{"replayStore: must be"}},
		{name: "replayStore with options", env: base().with("LTIOP_REPLAY_STORE", "rediss://redis:6380/0?skip_verify=true"), want: []string{"replayStore: the URL takes no query parameters"}},
		{name: "replayStore a bare address", env: base().with("LTIOP_REPLAY_STORE", "redis:6379"), want: []string{"replayStore: must be"}},
		{name: "replay password twice", env: base().with("LTIOP_REPLAY_STORE", "redis://:inurl@redis:6379/0", "LTIOP_REPLAY_STORE_PASSWORD", "p"),
			want: []string{"replayStore: give the Redis password once"}},
		{name: "replay password and file", args: []string{"--replay-store-password-file", "/p"},
			env: base().with("LTIOP_REPLAY_STORE", "redis://redis:6379/0", "LTIOP_REPLAY_STORE_PASSWORD", "p"), want: []string{"give the Redis password once"}},
		{name: "replay password for memory", env: base().with("LTIOP_REPLAY_STORE_PASSWORD", "p"), want: []string{"password is set but the store is memory"}},
		{name: "replayStore Sentinel master without addresses", env: base().with("LTIOP_REPLAY_STORE", "redis:///0").with("LTIOP_REPLAY_STORE_SENTINEL_MASTER", "m"), want: []string{"replayStoreSentinelMaster and replayStoreSentinelAddrs: give both"}},
		{name: "replayStore Sentinel with rediss:// and no host name to check the certificates against", env: base().with("LTIOP_REPLAY_STORE", "rediss:///0").with("LTIOP_REPLAY_STORE_SENTINEL_MASTER", "m").with("LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "sentinel-0:26379"), want: []string{"with Sentinel, a rediss:// URL must name the master's host name"}},
		{name: "replayStore Sentinel address not host:port", env: base().with("LTIOP_REPLAY_STORE", "redis:///0").with("LTIOP_REPLAY_STORE_SENTINEL_MASTER", "m").with("LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "sentinel-0"), want: []string{`replayStoreSentinelAddrs: "sentinel-0" is not host:port`}},
		{name: "replayStore Sentinel with memory", env: base().with("LTIOP_REPLAY_STORE_SENTINEL_MASTER", "m").with("LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "s:26379"), want: []string{"Sentinel is configured but the store is memory"}},
		{name: "replayStoreWaitReplicas negative", env: base().with("LTIOP_REPLAY_STORE", "redis://redis:6379/0", "LTIOP_REPLAY_STORE_WAIT_REPLICAS", "-1"), want: []string{"replayStoreWaitReplicas: must be auto or between 0 and 16, got -1"}},
		{name: "replayStoreWaitReplicas above 16", file: "replayStore: redis://redis:6379/0\nreplayStoreWaitReplicas: 17\n", env: base(), want: []string{"replayStoreWaitReplicas: must be auto or between 0 and 16, got 17"}},
		{name: "replayStoreWaitReplicas a word", args: []string{"--replay-store-wait-replicas", "always"}, env: base(), want: []string{"replay-store-wait-replicas", `must be "auto" or a number`}},
		{name: "replayStoreWaitReplicas a word in env", env: base().with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "Auto"), want: []string{"LTIOP_REPLAY_STORE_WAIT_REPLICAS", `must be "auto" or a number`}},
		{name: "YAML replayStoreWaitReplicas a fraction", file: "replayStoreWaitReplicas: 1.5\n", env: base(), want: []string{"configuration file", `must be "auto" or a number`}},
		{name: "YAML replayStoreWaitReplicas true", file: "replayStoreWaitReplicas: true\n", env: base(), want: []string{"configuration file", `must be "auto" or a number`}},
		{name: "replayStoreWaitReplicas with memory", env: base().with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "1"), want: []string{"replayStoreWaitReplicas: set, but the store is memory"}},
		{name: "replayStore Sentinel password without Sentinel", env: base().with("LTIOP_REPLAY_STORE_SENTINEL_PASSWORD", "x"), want: []string{"no Sentinel is configured"}},
		{name: "platformKeyRotateEvery too short", env: base().with("LTIOP_PLATFORM_KEY_ROTATE_EVERY", "1h"), want: []string{"platformKeyRotateEvery: must be 0"}},
		{name: "replayStoreTimeout zero", env: base().with("LTIOP_REPLAY_STORE_TIMEOUT", "0s"), want: []string{"replayStoreTimeout: must be between"}},
		{name: "rate limit without a burst", env: base().with("LTIOP_RATE_LIMIT_LAUNCH", "10"), want: []string{"LTIOP_RATE_LIMIT_LAUNCH", "rate/burst"}},
		{name: "rate limit bad burst", args: []string{"--rate-limit-oauth", "10/lots"}, env: base(), want: []string{"rate-limit-oauth"}},
		{name: "rate limit negative", env: base().with("LTIOP_RATE_LIMIT_REGISTER", "-1/5"), want: []string{"rateLimits.register.rate: must be between 0"}},
		{name: "rate limit zero burst", file: "rateLimits:\n  platformToken: {rate: 5, burst: 0}\n", env: base(), want: []string{"rateLimits.platformToken.burst: must be between 1"}},
		{name: "rate limit unknown group", file: "rateLimits:\n  keys: {rate: 5, burst: 5}\n", env: base(), want: []string{"configuration file", "keys"}},
		{name: "trusted proxy not a range", env: base().with("LTIOP_TRUSTED_PROXIES", "10.0.0.0/8,proxy.local"), want: []string{`trustedProxies: "proxy.local"`}},
		{name: "replayStoreTimeout too long", env: base().with("LTIOP_REPLAY_STORE_TIMEOUT", "11s"), want: []string{"replayStoreTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeYAML(t, tt.file)}, args...)
			}
			cfg, err := config.Load(args, tt.env.get)
			if err == nil {
				t.Fatalf("Load accepted the configuration: %+v", *cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a configuration along with error %v", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadAccepts(t *testing.T) {
	isolate(t)
	tests := []struct {
		name string
		args []string
		env  env
	}{
		{name: "http publicUrl in dev mode", args: []string{"--dev-mode"}, env: base().with("LTIOP_PUBLIC_URL", "http://localhost:3000")},
		{name: "http publicUrl with LTIOP_DEV_MODE", env: base().with("LTIOP_PUBLIC_URL", "http://localhost:3000", "LTIOP_DEV_MODE", "true")},
		{name: "metricsListen 0 disables metrics", env: base().with("LTIOP_METRICS_LISTEN", "0")},
		{name: "maxBodyBytes 1024", args: []string{"--max-body-bytes", "1024"}, env: base()},
		{name: "keyWorkers 64", args: []string{"--key-workers", "64"}, env: base()},
		{name: "keyWait exactly 1m", env: base().with("LTIOP_KEY_WAIT", "1m")},
		{name: "keyWait 0", env: base().with("LTIOP_KEY_WAIT", "0s")},
		{name: "listen on a host", env: base().with("LTIOP_LISTEN", "0.0.0.0:3000")},
		{name: "listen on IPv6", env: base().with("LTIOP_LISTEN", "[::1]:3000")},
		{name: "https launchUrl with query", env: base().with("LTIOP_LAUNCH_URL", "https://app.example.com/launch?x=1")},
		{name: "publicUrl with a path", env: base().with("LTIOP_PUBLIC_URL", "https://example.com/lti")},
		{name: "replayStore with the password in the URL", env: base().with("LTIOP_REPLAY_STORE", "rediss://user:pw@redis:6380/0")},
		{name: "replayStore memory, explicitly", args: []string{"--replay-store", "memory"}, env: base()},
		{name: "replayStore through Sentinel", env: base().with("LTIOP_REPLAY_STORE", "redis:///0", "LTIOP_REPLAY_STORE_SENTINEL_MASTER", "ltiop",
			"LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "sentinel-0:26379,sentinel-1:26379", "LTIOP_REPLAY_STORE_SENTINEL_PASSWORD", "pw")},
		{name: "replayStore through Sentinel over TLS, naming the master's host", env: base().with("LTIOP_REPLAY_STORE", "rediss://redis-master.example/0", "LTIOP_REPLAY_STORE_SENTINEL_MASTER", "ltiop",
			"LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "sentinel-0:26379", "LTIOP_REPLAY_STORE_SENTINEL_PASSWORD", "pw")},
		{name: "platformKeyRotateEvery 90 days", env: base().with("LTIOP_PLATFORM_KEY_ROTATE_EVERY", "2160h")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustLoad(t, tt.args, tt.env)
		})
	}
}

func TestLoadReportsAllProblemsTogether(t *testing.T) {
	isolate(t)
	e := env{
		"LTIOP_NAMESPACE":      "Bad_NS",
		"LTIOP_PUBLIC_URL":     "http://lti.example.com",
		"LTIOP_LISTEN":         "nope",
		"LTIOP_MAX_BODY_BYTES": "10",
		"LTIOP_KEY_WAIT":       "2m",
		"LTIOP_LAUNCH_URL":     "launch",
	}
	_, err := config.Load(nil, e.get)
	if err == nil {
		t.Fatal("Load accepted a configuration with six problems")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "invalid configuration: ") {
		t.Errorf("error %q lacks the invalid configuration prefix", msg)
	}
	for _, want := range []string{`namespace "Bad_NS"`, "publicUrl", `listen "nope"`, "maxBodyBytes", "keyWait", "launchUrl"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not report %q:\n%s", want, msg)
		}
	}
	if lines := strings.Count(msg, "\n") + 1; lines != 6 {
		t.Errorf("error has %d lines, want one per problem (6):\n%s", lines, msg)
	}
}

func TestValidateDirect(t *testing.T) {
	isolate(t)
	c := config.Default()
	c.Namespace = "ltiop"
	c.PublicURL = "https://lti.example.com//"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if c.PublicURL != "https://lti.example.com" {
		t.Errorf("Validate did not trim PublicURL: %q", c.PublicURL)
	}
	c.APIKeySecretKey = ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "apiKeySecretKey: required") {
		t.Errorf("Validate() with no apiKeySecretKey = %v", err)
	}
}

// The key prefix defaults to one per installation (its namespace); the password never
// travels in a flag or the YAML file, and no error repeats it.
func TestReplayStoreSettings(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, nil, base())
	if cfg.ReplayKeyPrefix() != "ltiop:ltiop:" {
		t.Errorf("default prefix %q", cfg.ReplayKeyPrefix())
	}
	cfg.ReplayStoreKeyPrefix = "mine:"
	if cfg.ReplayKeyPrefix() != "mine:" {
		t.Errorf("prefix %q", cfg.ReplayKeyPrefix())
	}
	if _, err := config.Load([]string{"--replay-store-password", "p"}, base().get); err == nil {
		t.Error("a password flag exists")
	}
	file := writeYAML(t, "replayStore: redis://redis:6379/0\nreplayStorePassword: p\n")
	if _, err := config.Load([]string{"--config", file}, base().get); err == nil {
		t.Error("a password in the YAML file was accepted")
	}
	_, err := config.Load(nil, base().with("LTIOP_REPLAY_STORE", "redis://:hunter2@redis:6379/0", "LTIOP_REPLAY_STORE_PASSWORD", "p").get)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v", err)
	}
	b, _ := json.Marshal(mustLoad(t, nil, base().with("LTIOP_REPLAY_STORE", "redis://redis:6379/0", "LTIOP_REPLAY_STORE_PASSWORD", "hunter2")))
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("the password is marshalled: %s", b)
	}
}

// replayStoreWaitReplicas is auto unless given: WAIT 1 when Sentinel finds the master (the
// HA set-up, whose failover would otherwise forget the last uses: issue #34), none for one
// Redis URL or memory; an explicit 0 turns it off, from any source.
func TestReplayWaitReplicas(t *testing.T) {
	isolate(t)
	sentinel := base().with("LTIOP_REPLAY_STORE", "redis:///0", "LTIOP_REPLAY_STORE_SENTINEL_MASTER", "mymaster",
		"LTIOP_REPLAY_STORE_SENTINEL_ADDRS", "sentinel-0:26379,sentinel-1:26379")
	redis := base().with("LTIOP_REPLAY_STORE", "redis://redis:6379/0")
	for _, tc := range []struct {
		name string
		args []string
		env  env
		file string
		want int
		auto bool
	}{
		{name: "memory", env: base(), want: 0, auto: true},
		{name: "one Redis URL", env: redis, want: 0, auto: true},
		{name: "Sentinel", env: sentinel, want: 1, auto: true},
		{name: "Sentinel, auto written out", env: sentinel.with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "auto"), want: 1, auto: true},
		{name: "Sentinel, off in the environment", env: sentinel.with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "0"), want: 0},
		{name: "Sentinel, off in the file", file: "replayStoreWaitReplicas: 0\n", env: sentinel, want: 0},
		{name: "Sentinel, off by flag over a file's 2", args: []string{"--replay-store-wait-replicas=0"}, file: "replayStoreWaitReplicas: 2\n", env: sentinel, want: 0},
		{name: "Sentinel, two", file: "replayStoreWaitReplicas: 2\n", env: sentinel, want: 2},
		{name: "Sentinel, auto in the file", file: "replayStoreWaitReplicas: auto\n", env: sentinel, want: 1, auto: true},
		{name: "one Redis URL with replicas behind it", env: redis.with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "1"), want: 1},
		{name: "memory, off", env: base().with("LTIOP_REPLAY_STORE_WAIT_REPLICAS", "0"), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeYAML(t, tc.file)}, args...)
			}
			cfg := mustLoad(t, args, tc.env)
			if got := cfg.ReplayWaitReplicas(); got != tc.want {
				t.Errorf("ReplayWaitReplicas() = %d, want %d", got, tc.want)
			}
			if cfg.ReplayStoreWaitReplicas.Given == tc.auto {
				t.Errorf("ReplayStoreWaitReplicas = %+v, want auto %v", cfg.ReplayStoreWaitReplicas, tc.auto)
			}
		})
	}
	for w, want := range map[config.WaitReplicas]string{{}: `"auto"`, config.WaitFor(0): `0`, config.WaitFor(2): `2`} {
		b, err := json.Marshal(w)
		if err != nil || string(b) != want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", w, b, err, want)
		}
		var back config.WaitReplicas
		if err := json.Unmarshal(b, &back); err != nil || back != w {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	d := config.Duration{Duration: 90 * time.Second}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"1m30s"` {
		t.Errorf("Marshal = %s, want \"1m30s\"", b)
	}
	var back config.Duration
	if err := json.Unmarshal(b, &back); err != nil || back != d {
		t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, back, err, d)
	}
	for _, bad := range []string{`90`, `"90"`, `"soon"`, `true`} {
		var v config.Duration
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted as %v", bad, v)
		}
	}
}

// Trusted proxies are ranges or single addresses; an IPv4-mapped address is its IPv4 form.
func TestTrustedProxyPrefixes(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, nil, base().with("LTIOP_TRUSTED_PROXIES", "10.1.2.3/8, 192.0.2.7,::ffff:198.51.100.1, fd00::/8"))
	var got []string
	for _, p := range cfg.TrustedProxyPrefixes() {
		got = append(got, p.String())
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "198.51.100.1/32", "fd00::/8"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TrustedProxyPrefixes = %q, want %q", got, want)
	}
}

// The log settings come from each source like the others, and dev mode leaves them alone.
func TestLogSettingsIndependentOfDevMode(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, []string{"--dev-mode"}, base())
	if cfg.LogLevel != "info" || cfg.LogFormat != "json" {
		t.Errorf("dev mode changed the log settings: %q %q", cfg.LogLevel, cfg.LogFormat)
	}
	cfg = mustLoad(t, []string{"--log-level=error"}, base().with("LTIOP_LOG_LEVEL", "debug", "LTIOP_LOG_FORMAT", "console"))
	if cfg.LogLevel != "error" || cfg.LogFormat != "console" || cfg.DevMode {
		t.Errorf("flag over env: %q %q devMode=%v", cfg.LogLevel, cfg.LogFormat, cfg.DevMode)
	}
}

// --version wins over everything else, even a configuration that would not validate.
func TestVersionFlag(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--public-url", "http://bad", "--version"}} {
		cfg, err := config.Load(args, env{}.get)
		if !errors.Is(err, config.ErrVersion) || cfg != nil {
			t.Errorf("Load(%q) = %v, %v; want ErrVersion", args, cfg, err)
		}
	}
}

// -h and --help are no error of the configuration: Load says help was asked for, and
// Usage lists every flag with its environment variable.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		if _, err := config.Load([]string{arg}, func(string) string { return "" }); !errors.Is(err, config.ErrHelp) {
			t.Errorf("Load(%s) = %v, want ErrHelp", arg, err)
		}
	}
	var out strings.Builder
	config.Usage(&out)
	for _, want := range []string{"-public-url", "LTIOP_PUBLIC_URL", "-config", "LTIOP_CONFIG", "-trusted-proxies", "KUBECONFIG"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Usage does not list %s:\n%s", want, out.String())
		}
	}
}
