// Package paths names the endpoints ltiop serves to learning platforms and tools, relative
// to its public URL. They are wire names: the controllers write them into registrations'
// status (what an LMS administrator or tool vendor pastes), dynamic registration sends them
// to the LMS, and the web server routes them. This is their one home.
package paths

// Tool mode: what an LMS calls.
const (
	// Login is the OIDC login initiation URL (GET and POST).
	Login = "/lti/login"
	// Launch is the redirect URI the LMS posts the id_token to.
	Launch = "/lti/launch"
	// LaunchComplete is where ltiop's own platform-storage page hands a checked launch over.
	LaunchComplete = "/lti/launch/complete"
	// Keys is the tool's JWKS with the public keys of every registration, kept for installs
	// whose LMSs were given it; a registration's own key set is at KeySet(id).
	Keys = "/lti/keys"
	// Register is the dynamic registration initiation URL.
	Register = "/lti/register"
	// RegisterWithToken is the registration URL when a registration token is required
	// (dynamicRegistration.requireToken); the path carries a secret, so logs show the pattern.
	RegisterWithToken = "/lti/register/{token}"
	// CanvasConfiguration is the Canvas developer-key JSON configuration.
	CanvasConfiguration = "/register/canvas"
)

// Platform mode: what an external tool calls.
const (
	// PlatformAuthorize is the OIDC authorization endpoint (GET and POST).
	PlatformAuthorize = "/lti/platform/authorize"
	// PlatformToken is the OAuth2 token endpoint for client-credentials grants.
	PlatformToken = "/lti/platform/token"
	// PlatformJWKS is the platform's key set.
	PlatformJWKS = "/lti/platform/jwks"
	// PlatformDeepLinkingReturn is where tools post deep-linking responses.
	PlatformDeepLinkingReturn = "/lti/platform/deeplinking"
	// PlatformServices is the root of the NRPS and AGS services ltiop serves to tools; the
	// {grant} segment is the sealed grant of one tool, deployment and context.
	PlatformServices = "/lti/platform/services/{grant}"
	// PlatformOpenIDConfiguration is the platform's OpenID configuration (LTI Dynamic
	// Registration with ltiop as the platform); PlatformRegister its registration endpoint.
	PlatformOpenIDConfiguration = "/lti/platform/openid-configuration"
	PlatformRegister            = "/lti/platform/register"
	// PlatformRegistrationPage frames a tool's registration and relays its closing message.
	PlatformRegistrationPage = "/lti/platform/registration"
)

// KeySet is the key set of one registration: only its own keys, so an LMS downloads what
// it trusts and nothing of the other tenants. id is the registration's metadata.name (a
// DNS subdomain, which needs no escaping in a path) or, for one re-registered
// dynamically, the name its LMS was given.
func KeySet(id string) string { return Keys + "/" + id }
