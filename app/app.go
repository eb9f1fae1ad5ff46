// Package app assembles ltiop: one controller-runtime manager running the controllers and
// the web server. main, the demo and the end-to-end tests all start it through here.
package app

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/controllers"
	"github.com/ltiop/ltiop/internal/config"
	"github.com/ltiop/ltiop/internal/replay"
	"github.com/ltiop/ltiop/webserver"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/clients/dynreg"
	"github.com/ltiop/ltiop/webserver/clients/platformdata"
	"github.com/ltiop/ltiop/webserver/clients/webhook"
	"github.com/ltiop/ltiop/webserver/handlers/admin"
	"github.com/ltiop/ltiop/webserver/handlers/oauthbroker"
	"github.com/ltiop/ltiop/webserver/handlers/onboarding"
	"github.com/ltiop/ltiop/webserver/handlers/platformmode"
	"github.com/ltiop/ltiop/webserver/handlers/toolmode"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/stores/launchhealth"
	"github.com/ltiop/ltiop/webserver/stores/platformcheck"
	"github.com/ltiop/ltiop/webserver/stores/ratelimit"
	"github.com/ltiop/ltiop/webserver/stores/registry"
	"github.com/ltiop/ltiop/webserver/stores/sessions"
	"github.com/ltiop/ltiop/webserver/stores/signing"
)

// Scheme knows the built-in kinds and ltiop's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := ltiv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// ManagerOptions are the manager settings of production, shared with the tests.
func ManagerOptions(cfg *config.Config) ctrl.Options {
	return ctrl.Options{
		Scheme: Scheme(),
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}},
			// No managedFields, and repeated strings stored once (intern.go).
			DefaultTransform: cacheTransform(),
			// Only ltiop's own Secrets are cached: memory does not grow with unrelated ones.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{ltiv1.LabelManagedBy: ltiv1.ManagedByValue})},
			},
		},
		Metrics:                metricsOptions(cfg),
		HealthProbeBindAddress: "0", // health is served by the web server itself
		// The manager waits for the web server's drain and graceful shutdown.
		GracefulShutdownTimeout: ptr.To(cfg.ShutdownDelay.Duration + cfg.ShutdownTimeout.Duration + 5*time.Second),
		// No election here: the controllers elect their runner themselves (controllerRunner),
		// so that losing the lease never stops the web server.
	}
}

// metricsOptions serves the metrics in plain HTTP, or over HTTPS to clients the API server
// authenticates and authorizes (get on /metrics), as kubebuilder v4 projects do.
func metricsOptions(cfg *config.Config) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: cfg.MetricsListen, ExtraHandlers: pprofHandlers(cfg.Pprof)}
	if cfg.MetricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return opts
}

// SetupControllers registers the field indexes and the reconcilers.
func SetupControllers(ctx context.Context, mgr ctrl.Manager, cfg *config.Config) error {
	if err := controllers.SetupIndexes(ctx, mgr); err != nil {
		return err
	}
	if err := (&controllers.ServiceSecretReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("ltiop"),
		Name:      cfg.ServiceSecret,
		Namespace: cfg.Namespace,

		PlatformKeyRotateEvery: cfg.PlatformKeyRotateEvery.Duration,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the service Secret controller: %w", err)
	}
	if err := (&controllers.PlatformRegistrationReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("ltiop"),
		PublicURL: cfg.PublicURL,
		DevMode:   cfg.DevMode,
		// Dynamic registrations never activated are deleted at this age.
		PendingExpiry: cfg.DynamicRegistration.PendingExpiry.Duration,
		Workers:       int(cfg.KeyWorkers),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PlatformRegistration controller: %w", err)
	}
	if err := (&controllers.ToolRegistrationReconciler{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorder("ltiop"),
		PublicURL: cfg.PublicURL,
		Issuer:    cfg.Platform().Issuer,
		DevMode:   cfg.DevMode,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ToolRegistration controller: %w", err)
	}
	return nil
}

// replayMemoryItems bounds the memory replay store: the single uses (states, nonces,
// codes…) of every endpoint, together.
const replayMemoryItems = 300_000

// App is a configured, not yet started ltiop.
type App struct {
	// Manager serves on every replica: the web server and the caches it reads. The
	// controllers run in a manager of their own on the elected replica (controllerRunner).
	Manager  ctrl.Manager
	Server   *webserver.Server
	Registry *registry.Registry
	// LaunchHealth writes each registration's launch health (tests flush it directly).
	LaunchHealth *launchhealth.Recorder
	// ToolHealth writes each ToolRegistration's launch health (platform mode).
	ToolHealth *launchhealth.ToolRecorder
	// ServiceCalls makes Events of failed calls to LMSs' services (tests flush it directly).
	ServiceCalls *launchhealth.ServiceCalls
	// Reachability probes registrations' LMSs (on the elected replica; tests probe directly).
	Reachability *platformcheck.Prober

	controllers *controllerRunner
	// closeReplay releases the replay store once the manager (and so the web server) stopped.
	closeReplay io.Closer
}

// Leading says whether this replica runs the controllers now.
func (a *App) Leading() bool { return a.controllers.Leading() }

// Option adjusts the manager options (tests run several ltiops in one process).
type Option func(*ctrl.Options)

// Client-side limits of the API-server clients when restCfg sets none. client-go's default,
// 5 requests a second per client, would cap new registrations near 5 a second (a key
// costs a Secret create and a status write), whatever the key workers; the API server's
// priority and fairness protects it beyond these.
const (
	apiServerQPS   = 200
	apiServerBurst = 400
)

// WithClientLimits returns restCfg with ltiop's client-side limits when it sets none.
func WithClientLimits(restCfg *rest.Config) *rest.Config {
	if restCfg.QPS != 0 {
		return restCfg
	}
	out := rest.CopyConfig(restCfg)
	out.QPS, out.Burst = apiServerQPS, apiServerBurst
	return out
}

// New builds ltiop for cfg against the cluster of restCfg.
func New(ctx context.Context, cfg *config.Config, restCfg *rest.Config, opts ...Option) (*App, error) {
	restCfg = WithClientLimits(restCfg)
	mgrOpts := ManagerOptions(cfg)
	for _, o := range opts {
		o(&mgrOpts)
	}
	mgr, err := ctrl.NewManager(restCfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	controllers := &controllerRunner{restCfg: restCfg, cfg: cfg, opts: opts, elect: cfg.LeaderElection, shared: mgr.GetCache()}
	if err := mgr.Add(controllers); err != nil {
		return nil, err
	}

	// The registry's informers are registered now, so the manager syncs them before it
	// starts the web server.
	reg := registry.New()
	if err := reg.Attach(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}

	// The API key Secret is the integrator's, not labelled by us: a second, tiny cache
	// follows that one Secret by name.
	apiKey, err := secretKey(ctx, restCfg, mgr, cfg.Namespace, cfg.APIKeySecret, cfg.APIKeySecretKey)
	if err != nil {
		return nil, fmt.Errorf("the API key: %w", err)
	}
	// The registration token, when required, is followed the same way (it is the operator's
	// Secret too); without it, /lti/register/{token} answers REGISTRATION_TOKEN_NOT_CONFIGURED.
	var registrationToken onboarding.TokenChecker
	if dr := cfg.DynamicRegistration; dr.RequireToken {
		if registrationToken, err = secretKey(ctx, restCfg, mgr, cfg.Namespace, dr.TokenSecret, dr.TokenSecretKey); err != nil {
			return nil, fmt.Errorf("the registration token: %w", err)
		}
	} else if cfg.RegistrationAutoActivate && cfg.PreApprovalURL == "" {
		ctrl.Log.WithName("setup").Info("warning: registrationAutoActivate is on without requireToken or preApprovalUrl: " +
			"anyone who reaches /lti/register gets an active registration, and the pending bound does not apply")
	}

	// Sealing keys come from the service Secret, which the operator creates and rotates.
	keyring, err := sessions.NewKeyring(nil)
	if err != nil {
		return nil, err
	}
	if _, err := keyring.Attach(ctx, mgr.GetCache(), cfg.Namespace, cfg.ServiceSecret); err != nil {
		return nil, err
	}
	// One replay store for every single-use rule of every handler: shared by the replicas
	// when it is Redis.
	replays, closeReplay, err := replay.Open(replayOptions(cfg))
	if err != nil {
		return nil, err
	}
	ctrl.Log.WithName("setup").Info("replay store", "store", replay.Redact(cfg.ReplayStore), "keyPrefix", cfg.ReplayKeyPrefix(),
		"waitReplicas", cfg.ReplayWaitReplicas())

	// Platform mode: the tool registrations and the platform signing key (service Secret).
	tools := registry.NewTools()
	if err := tools.Attach(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	platformKey, err := signing.NewKeyring(nil)
	if err != nil {
		return nil, err
	}
	if _, err := platformKey.Attach(ctx, mgr.GetCache(), cfg.Namespace, cfg.ServiceSecret); err != nil {
		return nil, err
	}
	// Every call to another host goes through the outbound guard.
	out, err := newOutboundClients(cfg)
	if err != nil {
		return nil, err
	}
	// One cache of the peers' key sets (LMSs in tool mode, tools in platform mode), which
	// the annotation lti.ltiop.dev/refresh-key-set empties of a peer's set on every replica.
	peerKeys := registry.NewPeerKeysBySource(out.keySets)
	if err := peerKeys.Attach(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	pm := cfg.Platform()
	platform := platformmode.New(platformmode.Options{
		PublicURL: cfg.PublicURL, Issuer: pm.Issuer, LaunchURL: pm.LaunchURL, DeepLinkingURL: pm.DeepLinkingURL,
		DeepLinkingReturnURL: pm.DeepLinkingReturnURL, DevMode: cfg.DevMode, ClockSkew: cfg.ClockSkew.Duration,
		DataURL: cfg.PlatformData.URL, ServiceGrantTTL: cfg.PlatformData.GrantLifetime.Duration,
	}, tools, peerKeys, platformKey, keyring, replays)

	onboard := onboarding.New(onboarding.Options{
		Tool: dynreg.ToolConfig{
			PublicURL: cfg.PublicURL, Name: cfg.ToolName, Description: cfg.ToolDescription, LogoURL: cfg.ToolLogoURL,
			DeepLinking: cfg.DeepLinkingURL != "", CanvasPrivacyLevel: cfg.CanvasPrivacyLevel,
			AssetProcessor: cfg.AssetProcessor.Enabled,
			Notices:        cfg.Notices.WebhookURL != "",
		},
		Namespace: cfg.Namespace, AutoActivate: cfg.RegistrationAutoActivate, PreApprovalURL: cfg.PreApprovalURL,
		Outbound:   out.dynReg,
		MaxPending: cfg.DynamicRegistration.MaxPending, RegistrationToken: registrationToken,
	}, reg, mgr.GetClient(), keyring, replays)
	noticeOpts, err := notices(ctx, restCfg, mgr, cfg, out.webhook)
	if err != nil {
		return nil, fmt.Errorf("notices: %w", err)
	}
	// The platform data API is signed like the notices, under the webhook's address policy.
	dataPolicy := out.webhook
	dataPolicy.Timeout = cfg.PlatformData.Timeout.Duration
	platform.SetData(&platformdata.Client{Sender: &webhook.Sender{Client: webhook.NewClient(dataPolicy), Key: noticeOpts.Webhook.Key}})
	// Launch health: recorded in memory on the launch path, written by every replica's loop.
	health := launchhealth.New(launchhealth.Options{
		Namespace: cfg.Namespace, Reader: mgr.GetClient(), Writer: mgr.GetClient(), Events: mgr.GetEventRecorder("ltiop"),
	})
	if err := mgr.Add(health); err != nil {
		return nil, err
	}
	// Platform mode's: each tool's launches, token requests and deep-linking responses.
	toolHealth := launchhealth.NewTools(launchhealth.Options{
		Namespace: cfg.Namespace, Reader: mgr.GetClient(), Writer: mgr.GetClient(), Events: mgr.GetEventRecorder("ltiop"),
	})
	if err := mgr.Add(toolHealth); err != nil {
		return nil, err
	}
	platform.SetHealth(toolHealth)
	serviceCalls := launchhealth.NewServiceCalls(launchhealth.Options{
		Namespace: cfg.Namespace, Reader: mgr.GetClient(), Events: mgr.GetEventRecorder("ltiop"),
	})
	if err := mgr.Add(serviceCalls); err != nil {
		return nil, err
	}
	tool, err := toolmode.New(toolmode.Options{
		Notices: noticeOpts, Health: health, ServiceHealth: serviceCalls,
		PublicURL: cfg.PublicURL, LaunchURL: cfg.LaunchURL, DeepLinkingURL: cfg.DeepLinkingURL,
		DevMode: cfg.DevMode, ClockSkew: cfg.ClockSkew.Duration, Deployments: onboard,
		ServiceKeyLifetime: cfg.ServiceKeyLifetime.Duration, SubmissionReviewURL: cfg.SubmissionReviewURL,
		MessageLaunchURLs: cfg.MessageLaunchURLs, MaxAssetBytes: cfg.AssetProcessor.MaxAssetBytesOrDefault(),
		AssetClient: advantage.NewClientBySource(out.assets), AssetTimeout: cfg.AssetProcessor.DownloadTimeoutOrDefault(),
	}, reg, peerKeys, keyring, replays, apiKey, advantage.NewClientBySource(out.advantage))
	if err != nil {
		return nil, err
	}

	broker := oauthbroker.New(oauthbroker.Options{
		PublicURL: cfg.PublicURL, ReturnURL: cfg.OAuthReturnURL, AllowedReturnURLs: cfg.OAuthAllowedReturnURLs, DevMode: cfg.DevMode,
		HTTPClient: out.oauth,
	}, reg, oauthbroker.NewSecretClients(mgr.GetAPIReader(), cfg.Namespace).Resolve, keyring, replays)

	// The registration checks: on demand (POST /api/platforms/{id}/check) on any replica,
	// and periodically on the elected one (the KeySetReachable and EndpointsReachable
	// conditions). The probe lives with the checks it runs, so it is run beside the
	// controllers rather than by them (controllers/ and webserver/ do not import each other).
	checker := &platformcheck.Checker{KeySets: peerKeys, Clients: out.checks}
	prober := platformcheck.NewProber(platformcheck.ProberOptions{
		Namespace: cfg.Namespace, Registry: reg, Checker: checker, Interval: cfg.ReachabilityProbeInterval.Duration,
		Reader: mgr.GetClient(), Writer: mgr.GetClient(), Events: mgr.GetEventRecorder("ltiop"),
	})
	if cfg.ReachabilityProbeInterval.Duration > 0 {
		controllers.leaderOnly = append(controllers.leaderOnly, prober)
	}
	platforms := &admin.Platforms{
		Registry: reg, Client: mgr.GetClient(), Namespace: cfg.Namespace, DevMode: cfg.DevMode, KeyWait: cfg.KeyWait.Duration,
		Cursors: keyring, PublicURL: cfg.PublicURL,
		Checker: checker,
	}
	toolsAPI := &admin.Tools{
		Registry: tools, Client: mgr.GetClient(), Namespace: cfg.Namespace, DevMode: cfg.DevMode, KeyWait: cfg.KeyWait.Duration,
		Cursors: keyring, PublicURL: cfg.PublicURL,
	}

	srv := webserver.New(webserver.Options{
		Listen:          cfg.Listen,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		DrainDelay:      cfg.ShutdownDelay.Duration,
		ShutdownTimeout: cfg.ShutdownTimeout.Duration,
		RateLimits:      rateLimits(cfg),
	}, webserver.Handlers{
		APIKey: apiKey, Keys: toolmode.Keys(reg), KeySet: toolmode.KeySet(reg), Tool: tool, Onboarding: onboard, OAuth: broker,
		Platform: platform, Platforms: platforms, Tools: toolsAPI,
		ToolDynReg: &admin.ToolDynReg{Tools: toolsAPI, Sealer: keyring, Replays: replays, Issuer: pm.Issuer, PublicURL: cfg.PublicURL,
			Outbound: out.dynReg},
	},
		webserver.ReadinessCheck{Name: "registrations", Ready: reg.HasSynced, Waiting: "Registrations are still loading."},
		webserver.ReadinessCheck{Name: "sealing-keys", Ready: keyring.Ready, Waiting: "The sealing keys (Secret " + cfg.ServiceSecret + ") are not loaded yet."},
		webserver.ReadinessCheck{Name: "platform-key", Ready: platformKey.Ready, Waiting: "The platform signing key (Secret " + cfg.ServiceSecret + ") is not loaded yet."},
		webserver.ReadinessCheck{Name: "tool-registrations", Ready: tools.HasSynced, Waiting: "Tool registrations are still loading."},
		webserver.ReadinessCheck{Name: "api-key", Ready: apiKey.Usable, Waiting: apiKey.Waiting()},
	)
	if err := mgr.Add(srv); err != nil {
		return nil, err
	}
	return &App{Manager: mgr, Server: srv, Registry: reg, LaunchHealth: health, ToolHealth: toolHealth, ServiceCalls: serviceCalls, Reachability: prober, controllers: controllers, closeReplay: closeReplay}, nil
}

// Start runs ltiop until ctx ends. The replay store is closed after the web server has
// finished its requests, not before.
func (a *App) Start(ctx context.Context) error {
	err := a.Manager.Start(ctx)
	_ = a.closeReplay.Close()
	return err
}

// secretKey follows data key dataKey of the Secret name, not labelled by us, through a
// tiny cache of its own that holds only that Secret, started with the manager.
func secretKey(ctx context.Context, restCfg *rest.Config, mgr ctrl.Manager, namespace, name, dataKey string) (*httpapi.APIKey, error) {
	c, err := cache.New(restCfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of Secret %s: %w", name, err)
	}
	key := httpapi.NewAPIKey(name, dataKey)
	if err := key.Attach(ctx, c); err != nil {
		return nil, err
	}
	return key, mgr.Add(cacheRunnable{c})
}

// cacheRunnable makes the manager start a cache with its own caches, on every replica,
// and wait for it to sync before starting the web server.
type cacheRunnable struct{ cache.Cache }

func (c cacheRunnable) GetCache() cache.Cache { return c.Cache }

// rateLimits turns the configured limits into the web server's.
func rateLimits(cfg *config.Config) webserver.RateLimits {
	lim := func(l config.RateLimit) ratelimit.Limit { return ratelimit.Limit{Rate: l.Rate, Burst: l.Burst} }
	r := cfg.RateLimits
	return webserver.RateLimits{
		Launch: lim(r.Launch), Register: lim(r.Register), PlatformAuthorize: lim(r.PlatformAuthorize),
		PlatformToken: lim(r.PlatformToken), OAuth: lim(r.OAuth), Notices: lim(r.Notices), TrustedProxies: cfg.TrustedProxyPrefixes(),
	}
}

// replayOptions are the replay store's options from cfg.
func replayOptions(cfg *config.Config) replay.Options {
	return replay.Options{
		URL: cfg.ReplayStore, Password: cfg.ReplayStorePassword, PasswordFile: cfg.ReplayStorePasswordFile,
		Sentinel: replaySentinel(cfg), WaitReplicas: cfg.ReplayWaitReplicas(),
		KeyPrefix: cfg.ReplayKeyPrefix(), Timeout: cfg.ReplayStoreTimeout.Duration, MemoryItems: replayMemoryItems,
	}
}

// replaySentinel is the Sentinel set-up of the replay store, nil without one.
func replaySentinel(cfg *config.Config) *replay.SentinelOptions {
	if cfg.ReplayStoreSentinelMaster == "" {
		return nil
	}
	return &replay.SentinelOptions{MasterName: cfg.ReplayStoreSentinelMaster, Addrs: cfg.ReplayStoreSentinelAddrs,
		Username: cfg.ReplayStoreSentinelUsername, Password: cfg.ReplayStoreSentinelPassword}
}
