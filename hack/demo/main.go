// Command demo runs ltiop end to end with no cluster: a local kube-apiserver and etcd
// (built from the Go module proxy by hack/build-binaries.sh), the CRDs, an API key, the
// samples, and ltiop in dev mode. It launches once from an LMS simulator (tool mode) and
// once into a sample tool from the integrator's platform app (platform mode). It runs until
// interrupted, then removes everything.
//
// LTIOP_DEMO_REPLICAS=N (default 1) runs N ltiops, each on its own loopback port, behind a
// round-robin proxy on LTIOP_LISTEN that plays the Kubernetes Service, with leader election
// on and a redis-server the demo starts as their shared replay store.
//
// It needs no terminal: LTIOP_LISTEN and LTIOP_API_KEY (and every other LTIOP_* setting)
// are read from the environment, so scripts can start it and wait for /readyz.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/ltiop/ltiop/app"
	"github.com/ltiop/ltiop/hack/localcluster"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/simulators/integratorsim"
	"github.com/ltiop/ltiop/simulators/lmssim"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

const namespace = "ltiop-system"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	log.SetLogger(zap.New(zap.UseDevMode(false), zap.WriteTo(os.Stderr)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Several replicas need a shared replay store: say what is missing before starting anything.
	replicas, err := replicaCount()
	if err != nil {
		return err
	}
	redisBin, err := redisToStart(replicas)
	if err != nil {
		return err
	}
	listen := envOr("LTIOP_LISTEN", "127.0.0.1:3000")
	listens, err := replicaListens(listen, replicas)
	if err != nil {
		return err
	}
	apiKey, err := demoAPIKey(os.Getenv("LTIOP_API_KEY"))
	if err != nil {
		return err
	}
	publicURL := envOr("LTIOP_PUBLIC_URL", "http://"+reachable(listen))
	lms, err := startDemoLMS(envOr("LTIOP_DEMO_LMS_LISTEN", "127.0.0.1:3001"), publicURL, apiKey)
	if err != nil {
		return err
	}
	plat, err := startDemoPlatform(envOr("LTIOP_DEMO_TOOL_LISTEN", "127.0.0.1:3003"),
		envOr("LTIOP_DEMO_PLATFORM_LISTEN", "127.0.0.1:3002"), publicURL, apiKey)
	if err != nil {
		return err
	}
	defer plat.Close()
	cfg, err := config.Load(nil, func(name string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return map[string]string{
			"LTIOP_NAMESPACE": namespace, "LTIOP_PUBLIC_URL": publicURL, "LTIOP_LISTEN": listen,
			"LTIOP_METRICS_LISTEN": "0", "LTIOP_DEV_MODE": "true",
			"LTIOP_LAUNCH_URL": lms.LaunchURL(), "LTIOP_DEEP_LINKING_URL": lms.LaunchURL(),
			// Platform notices go to the demo integrator's webhook.
			"LTIOP_NOTICE_WEBHOOK_URL": lms.WebhookURL(),
			// Platform mode: the integrator's pages that answer tool launches.
			"LTIOP_PLATFORM_LAUNCH_URL":              plat.LaunchURL(),
			"LTIOP_PLATFORM_DEEP_LINKING_URL":        plat.DeepLinkingURL(),
			"LTIOP_PLATFORM_DEEP_LINKING_RETURN_URL": plat.DeepLinkingReturnURL(),
			// and its platform data API, which feeds the roster and grades ltiop serves tools.
			"LTIOP_PLATFORM_DATA_URL": plat.DataURL(),
			// LMS simulators on this machine may register dynamically.
			"LTIOP_OUTBOUND_ALLOW_LOOPBACK": "true",
			// No load balancer to drain: Ctrl-C stops at once.
			"LTIOP_SHUTDOWN_DELAY": "0s",
		}[name]
	})
	if err != nil {
		return err
	}
	storeNote := "" // where the replicas' shared replay store comes from
	if replicas > 1 {
		cfg.LeaderElection = true
		storeNote = "from LTIOP_REPLAY_STORE"
		if redisBin != "" {
			redis, err := startRedis(ctx, redisBin)
			if err != nil {
				return err
			}
			defer redis.stop()
			cfg.ReplayStore = redis.URL
			storeNote = "a redis-server the demo started, stopped and removed at exit"
		}
	}

	fmt.Fprintln(os.Stderr, "demo: starting a local control plane (kube-apiserver + etcd)...")
	env := localcluster.New(root)
	restCfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane (run it through `make demo`, which builds the binaries): %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the control plane:", err)
		}
	}()

	tmp, err := os.MkdirTemp("", "ltiop-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := writeKubeconfig(env.KubeConfig, kubeconfig); err != nil {
		return err
	}

	k8s, err := client.New(restCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	if err := seed(ctx, k8s, root, cfg, apiKey); err != nil {
		return err
	}
	if err := registerLMS(ctx, k8s, cfg, lms); err != nil {
		return err
	}

	if replicas > 1 {
		proxy, err := startProxy(listen, listenURLs(listens))
		if err != nil {
			return err
		}
		defer proxy.Close()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs, err := startReplicas(runCtx, cfg, restCfg, listens)
	if err != nil {
		return err
	}
	if replicas > 1 {
		fmt.Printf("\n%d ltiop replicas with leader election, behind a round-robin proxy on http://%s that plays the Kubernetes Service:\n",
			replicas, reachable(listen))
		for _, r := range rs.list {
			fmt.Printf("replica %d: %s\n", r.n, r.url)
		}
		fmt.Printf("replay store: %s (%s), shared by every replica\n", replay.Redact(cfg.ReplayStore), storeNote)
		go rs.watchLeader(runCtx)
	}
	if err := rs.waitReady(ctx); err != nil {
		return err
	}

	ltik, err := lms.Launch(ctx)
	if err != nil {
		return fmt.Errorf("the demo launch failed: %w", err)
	}
	token, err := lms.IDToken(ctx, ltik)
	if err != nil {
		return err
	}
	fmt.Printf("\nA launch from the LMS simulator went through ltiop; GET /api/idtoken answered:\n\n%s\n", token)
	roster, results, err := lms.Services(ctx, ltik)
	if err != nil {
		return fmt.Errorf("the demo's service calls failed: %w", err)
	}
	fmt.Printf("\nGET /api/memberships?limit=3 (the course roster, through NRPS):\n\n%s\n", roster)
	fmt.Printf("\nA grade of 87/100 was posted with POST /api/lineitems/{id}/scores; the line item's results now read:\n\n%s\n", results)
	groups, err := lms.Groups(ctx, ltik)
	if err != nil {
		return fmt.Errorf("the demo's groups call failed: %w", err)
	}
	fmt.Printf("\nGET /api/groups?limit=3 (the course groups, through the Course Groups Service):\n\n%s\n", groups)
	handler, hook, err := lms.Notices(ctx, ltik)
	if err != nil {
		return fmt.Errorf("the demo's notices failed: %w", err)
	}
	fmt.Printf("\nPUT /api/notices/handlers registered ltiop's notice endpoint with the LMS (Platform Notification Service):\n\n%s\n", handler)
	fmt.Printf("\nThe LMS sent a signed LtiAssetProcessorSubmissionNotice; ltiop validated it and the demo integrator's webhook\n"+
		"received (Standard Webhooks signature verified):\n\n%s", integratorsim.ShortenNoticeKey(hook))
	downloads, recorded, err := lms.NoticeWork(ctx, hook)
	if err != nil {
		return fmt.Errorf("the demo's notice-driven Asset Processor calls failed: %w", err)
	}
	fmt.Printf("\nWith only the webhook's notice key (NOTICE-AUTH-V1, no launch) the demo integrator downloaded the submission:\n\n%s", downloads)
	fmt.Printf("\nand posted its report with POST /api/reports; the LMS recorded (shown at %s):\n\n%s\n", lms.Base+lmssim.ReportsPagePath, recorded)
	review, err := lms.AssetProcessor(ctx)
	if err != nil {
		return fmt.Errorf("the demo's Asset Processor calls failed: %w", err)
	}
	fmt.Printf("\nAsset Processor from a launch: a teacher opened the report (LtiReportReviewRequest); with its ltik\nGET /api/assets/%s streamed the submitted essay (%s, %d bytes):\n\n  %s\n",
		lmssim.DemoAssetID, review.ContentType, len(review.Essay), review.Essay)
	fmt.Printf("and POST /api/reports sent this updated report to the LMS (shown at %s):\n\n%s\n", lms.Base+lmssim.ReportsPagePath, review.Posted)

	if err := registerDemoTool(ctx, plat, k8s, cfg.Namespace); err != nil {
		return fmt.Errorf("registering the demo tool: %w", err)
	}
	pl, err := plat.LaunchOnce(ctx)
	if err != nil {
		return fmt.Errorf("the demo platform-mode launch failed: %w", err)
	}
	fmt.Printf("\nPlatform mode: the integrator's platform app launched ToolRegistration %s through ltiop\n"+
		"(POST /api/launches, the tool's login, /lti/platform/authorize, POST /api/launches/idtoken).\n"+
		"The sample tool, registered by dynamic registration, verified the id_token and saw:\n\n%s", integratorsim.ToolRegistrationName, pl.Summary())
	fmt.Printf("\nThe tool got an access token from /lti/platform/token (scope %s);\nPOST /api/tokens/introspect answered:\n\n%s\n", pl.Scope, pl.Introspection)
	fmt.Printf("\nWith it the tool read the course roster through ltiop's NRPS, fed by the platform app's data API: %d members,\n", pl.Members)
	fmt.Printf("and posted a score through ltiop's AGS; the demo integrator's data API received (signature verified):\n\n"+
		"  user %s: %g/%g, %s, %s, %q\n", pl.Score.UserID, *pl.Score.ScoreGiven, *pl.Score.ScoreMaximum, pl.Score.ActivityProgress,
		pl.Score.GradingProgress, pl.Score.Comment)

	envFile := filepath.Join(root, "tmp", "demo.env")
	if err := writeEnvFile(envFile, kubeconfig, cfg.PublicURL, apiKey); err != nil {
		return err
	}
	defer os.Remove(envFile)
	topology := "" // what the banner says about several replicas
	if replicas > 1 {
		topology = rs.topology(reachable(listen), replay.Redact(cfg.ReplayStore), storeNote)
	}
	printBanner(cfg.PublicURL, apiKey, kubeconfig, envFile, lms.Base+"/start", plat.Base+"/start", topology)

	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "\ndemo: interrupted, cleaning up...")
		cancel()
		if err := rs.wait(); err != nil {
			return err
		}
	case e := <-rs.done:
		return fmt.Errorf("%s stopped: %w", rs.name(e.n), e.err)
	}
	return nil
}

// seed creates the namespace, the API key Secret and the sample registrations.
// demoAPIKey is LTIOP_API_KEY, or a random key when it is unset. A key ltiop would refuse
// (shorter than httpapi.MinAPIKeyLength) is an error now, rather than a server that never
// becomes ready.
func demoAPIKey(fromEnv string) (string, error) {
	if fromEnv == "" {
		return randomKey(), nil
	}
	if len(fromEnv) < httpapi.MinAPIKeyLength {
		return "", fmt.Errorf("LTIOP_API_KEY has %d characters; ltiop needs at least %d. "+
			"Unset it for a random key, or set a longer one: export LTIOP_API_KEY=$(openssl rand -hex 32)",
			len(fromEnv), httpapi.MinAPIKeyLength)
	}
	return fromEnv, nil
}

func seed(ctx context.Context, k8s client.Client, root string, cfg *config.Config, apiKey string) error {
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}); err != nil {
		return err
	}
	if err := k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.APIKeySecret},
		StringData: map[string]string{cfg.APIKeySecretKey: apiKey, cfg.Notices.WebhookSecretKey: demoWebhookSecret},
	}); err != nil {
		return err
	}
	samples, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil {
		return err
	}
	for _, file := range samples {
		if filepath.Base(file) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			obj.SetNamespace(cfg.Namespace)
			if err := k8s.Create(ctx, obj); err != nil {
				return fmt.Errorf("applying %s: %w", file, err)
			}
		}
	}
	return nil
}

// writeKubeconfig writes the admin kubeconfig with the demo namespace as its default.
func writeKubeconfig(data []byte, path string) error {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	for _, c := range kc.Contexts {
		c.Namespace = namespace
	}
	return clientcmd.WriteToFile(*kc, path)
}

func writeEnvFile(path, kubeconfig, url, apiKey string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lines := []string{
		"export KUBECONFIG=" + kubeconfig,
		"export LTIOP_URL=" + url,
		"export LTIOP_API_KEY=" + apiKey,
	}
	if dir := os.Getenv("LTIOP_DEMO_KUBECTL_DIR"); dir != "" {
		lines = append(lines, "export PATH="+dir+":$PATH")
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func printBanner(url, apiKey, kubeconfig, envFile, launchByHand, platformStart, topology string) {
	fmt.Printf(`
ltiop is running (dev mode: http and loopback URLs are accepted).%[7]s

  Launch by hand     open %[5]s in a browser (the LMS simulator launches you into a page
                     that shows the ID token)
  Platform mode      open %[6]s: the integrator's platform app launches the sample
                     tool (ToolRegistration demo-tool); its home page also tries deep linking

  OIDC login URL     %[1]s/lti/login
  Launch URL         %[1]s/lti/launch
  JWKS URL           %[1]s/lti/keys
  Platforms API      %[1]s/api/platforms
  Platform authorize %[1]s/lti/platform/authorize
  Platform token     %[1]s/lti/platform/token
  Platform JWKS      %[1]s/lti/platform/jwks
  Launches API       %[1]s/api/launches
  OpenAPI document   %[1]s/api/openapi.json
  API key            %[2]s

In another terminal:

  source %[4]s        # sets KUBECONFIG, LTIOP_URL and LTIOP_API_KEY
  kubectl get platreg,toolreg
  curl -s -H "Authorization: Bearer $LTIOP_API_KEY" $LTIOP_URL/api/platforms

or by hand:

  export KUBECONFIG=%[3]s
  curl -s -H "Authorization: Bearer %[2]s" %[1]s/api/platforms

Press Ctrl-C to stop; everything is removed.
`, url, apiKey, kubeconfig, envFile, launchByHand, platformStart, topology)
}

// reachable turns a listen address into one a client can dial (":3000" -> "127.0.0.1:3000").
func reachable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func randomKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
