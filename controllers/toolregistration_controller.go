package controllers

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/paths"
	"github.com/ltiop/ltiop/internal/registration"
	"github.com/ltiop/ltiop/internal/urls"
)

// IndexToolClientID indexes ToolRegistrations by their effective client id
// (ToolRegistration.EffectiveClientID).
const IndexToolClientID = "spec.effectiveClientId"

// toolElection keeps the older of two ToolRegistrations with the same effective client id.
var toolElection = newElection[ltiv1.ToolRegistrationList](IndexToolClientID,
	(*ltiv1.ToolRegistration).EffectiveClientID,
	func(older, tool *ltiv1.ToolRegistration) string {
		return fmt.Sprintf("ToolRegistration %s already has client id %s; this newer one is not used.",
			older.Name, tool.EffectiveClientID())
	})

// ToolRegistrationReconciler validates every ToolRegistration (platform mode) and publishes
// in its status what the tool vendor must configure: issuer, client_id, deployment_id and
// the platform's endpoints. A ToolRegistration owns no Secret: its key is the tool's public
// key, and the platform's signing key lives in the service Secret.
type ToolRegistrationReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// PublicURL is the external base URL of the web server, used for the status URLs.
	PublicURL string
	// Issuer is the iss of the id_tokens the tools receive; empty means PublicURL.
	Issuer string
	// DevMode accepts http URLs in every registration.
	DevMode bool
}

// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=toolregistrations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=toolregistrations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=lti.ltiop.dev,namespace=ltiop-system,resources=toolregistrations/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,namespace=ltiop-system,resources=events,verbs=create;patch

// Reconcile checks the registration and brings its status up to date.
func (r *ToolRegistrationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &ltiv1.ToolRegistration{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing of ours to clean up
	}

	next := tool.DeepCopy()
	status := &next.Status
	status.Issuer = r.Issuer
	if status.Issuer == "" {
		status.Issuer = r.PublicURL
	}
	status.ClientID = tool.EffectiveClientID()
	status.DeploymentID = tool.Spec.Deployment()
	status.AuthorizationEndpoint = r.PublicURL + paths.PlatformAuthorize
	status.TokenEndpoint = r.PublicURL + paths.PlatformToken
	status.JWKSURL = r.PublicURL + paths.PlatformJWKS

	p := r.checkToolSpec(tool)
	if p == nil {
		var err error
		if p, err = toolElection.check(ctx, r.Client, tool); err != nil {
			return ctrl.Result{}, err
		}
	}
	readyMessage := "The tool is ready: it may be launched and may obtain access tokens."
	if !tool.Spec.IsActive() {
		readyMessage = "The tool is ready but inactive: launches and access tokens are refused until it is activated."
	}
	news := setReadiness(&status.ObservedGeneration, &status.Conditions, tool.Generation, p, readyMessage)
	return statusWritten(writeStatus(ctx, r.Client, r.Recorder, tool, next, news), 0)
}

// checkToolSpec validates what the schema cannot: https outside dev mode, redirection URIs
// fit for OAuth2, and the tool's key.
func (r *ToolRegistrationReconciler) checkToolSpec(tool *ltiv1.ToolRegistration) *problem {
	allowHTTP := r.DevMode || tool.Spec.DevMode
	type field struct{ name, value string }
	fields := []field{{"loginUrl", string(tool.Spec.LoginURL)}}
	for i, u := range tool.Spec.RedirectionURIs {
		fields = append(fields, field{fmt.Sprintf("redirectionUris[%d]", i), string(u)})
	}
	fields = append(fields, field{"targetLinkUri", string(tool.Spec.TargetLinkURI)})
	if tool.Spec.DeepLinkingURL != "" {
		fields = append(fields, field{"deepLinkingUrl", string(tool.Spec.DeepLinkingURL)})
	}
	if tool.Spec.PlatformDataURL != "" {
		fields = append(fields, field{"platformDataUrl", string(tool.Spec.PlatformDataURL)})
	}
	if tool.Spec.AuthConfig.Method == ltiv1.AuthMethodJWKSet && !allowHTTP && isHTTP(tool.Spec.AuthConfig.Key) {
		// Only the scheme is judged here; the rest of the key set URL is checked with the key.
		fields = append(fields, field{"authConfig.key", tool.Spec.AuthConfig.Key})
	}
	for _, f := range fields {
		if err := urls.Check(f.value, allowHTTP); err != nil {
			return &problem{ltiv1.ReasonInsecureURL, fmt.Sprintf("spec.%s: %v.", f.name, err)}
		}
	}

	for i, u := range tool.Spec.RedirectionURIs {
		// An unescaped "#" always starts a fragment, even an empty one ("…/launch#").
		if strings.Contains(string(u), "#") {
			return &problem{ltiv1.ReasonInvalidRedirectionURI, fmt.Sprintf(
				"spec.redirectionUris[%d]: %q carries a fragment, which an OAuth2 redirection URI must not (RFC 6749 §3.1.2).", i, string(u))}
		}
	}

	if err := registration.ValidateKey(tool.Spec.AuthConfig, allowHTTP, registration.OwnerTool); err != nil {
		return &problem{ltiv1.ReasonInvalidAuthConfig, fmt.Sprintf("spec.authConfig: %v.", err)}
	}
	return nil
}

// isHTTP reports a URL with the plain http scheme.
func isHTTP(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "http"
}

// SetupWithManager registers the controller; the field index must be added by the caller
// (see SetupIndexes) before the manager starts.
func (r *ToolRegistrationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&ltiv1.ToolRegistration{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A tool's peers with the same client id may change state when it appears, changes
		// or goes away (an update maps both the old and the new object).
		Watches(&ltiv1.ToolRegistration{}, handler.EnqueueRequestsFromMapFunc(toolElection.enqueuePeers(r.Client)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{RateLimiter: rateLimiter()}).
		Named("toolregistration").
		Complete(r)
}
