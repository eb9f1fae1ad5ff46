package toolsim

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// AssertionOption changes the claims or the JOSE header of a JWT before the tool signs it;
// tests use it to break tokens (delete "jti", set "alg" to "none", …). The header's "alg"
// chooses how the token is really signed (see SignJWT).
type AssertionOption func(claims map[string]any, header map[string]any)

// WithClaim sets a claim.
func WithClaim(name string, value any) AssertionOption {
	return func(c, _ map[string]any) { c[name] = value }
}

// WithoutClaim removes a claim.
func WithoutClaim(name string) AssertionOption {
	return func(c, _ map[string]any) { delete(c, name) }
}

// WithHeader sets a header member ("alg" included).
func WithHeader(name string, value any) AssertionOption {
	return func(_, h map[string]any) { h[name] = value }
}

// WithoutHeader removes a header member ("kid", "typ"; removing "alg" makes signing fail).
func WithoutHeader(name string) AssertionOption {
	return func(_, h map[string]any) { delete(h, name) }
}

// WithAlg sets the header's alg, and so the algorithm the token is signed with.
func WithAlg(alg string) AssertionOption { return WithHeader("alg", alg) }

// hmacSecret and signingKey ride in the header map from the options to the signer, which
// removes them; they are never serialized.
type (
	hmacSecret []byte
	signingKey struct{ key *rsa.PrivateKey }
)

const (
	hmacSecretMember = "toolsim:hmac-secret"
	signingKeyMember = "toolsim:signing-key"
)

// WithHMACSecret signs with HMAC under secret; with no alg option the alg becomes HS256.
// Without this option an HS* alg uses the tool's public key PEM as the secret, the classic
// algorithm-confusion forgery.
func WithHMACSecret(secret []byte) AssertionOption {
	return func(_, h map[string]any) {
		h[hmacSecretMember] = hmacSecret(secret)
		if a, _ := h["alg"].(string); len(a) < 2 || a[:2] != "HS" {
			h["alg"] = "HS256"
		}
	}
}

// WithSigningKey signs with key instead of the tool's key, the header (kid included)
// unchanged: a token whose signature does not verify against the tool's JWKS.
func WithSigningKey(key *rsa.PrivateKey) AssertionOption {
	return func(_, h map[string]any) { h[signingKeyMember] = signingKey{key} }
}

// SignJWT signs claims with the tool key (header alg RS256, kid, typ JWT) after applying
// opts. The alg the header ends up with is really used: "none" gives header.payload. with
// an empty signature, HS256/384/512 an HMAC (WithHMACSecret), RS* and PS* an RSA signature
// with the tool key (or WithSigningKey's). claims is not modified.
func (t *Tool) SignJWT(claims map[string]any, opts ...AssertionOption) (string, error) {
	c := maps.Clone(claims)
	if c == nil {
		c = map[string]any{}
	}
	return t.sign(c, t.header(), opts)
}

func (t *Tool) header() map[string]any {
	return map[string]any{"alg": "RS256", "kid": t.kid, "typ": "JWT"}
}

func (t *Tool) sign(claims, header map[string]any, opts []AssertionOption) (string, error) {
	for _, o := range opts {
		o(claims, header)
	}
	secret := []byte(t.pubPEM)
	rsaKey := t.key
	for name, v := range header {
		switch v := v.(type) {
		case hmacSecret:
			secret = v
			delete(header, name)
		case signingKey:
			rsaKey = v.key
			delete(header, name)
		}
	}
	algName, ok := header["alg"].(string)
	if !ok {
		return "", errors.New("the header needs a string alg to sign")
	}
	delete(header, "alg")
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	headers := jws.NewHeaders()
	for name, v := range header {
		if err := headers.Set(name, v); err != nil {
			return "", fmt.Errorf("header %s: %w", name, err)
		}
	}
	var out []byte
	if algName == "none" {
		out, err = jws.Sign(payload, jws.WithInsecureNoSignature(jws.WithProtectedHeaders(headers)))
		return string(out), err
	}
	alg, ok := jwa.LookupSignatureAlgorithm(algName)
	if !ok {
		return "", fmt.Errorf("alg %q is not a JWS algorithm", algName)
	}
	var key any
	switch alg {
	case jwa.HS256(), jwa.HS384(), jwa.HS512():
		key = secret
	case jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.PS384(), jwa.PS512():
		if rsaKey == nil {
			return "", errors.New("no RSA key to sign with")
		}
		key = rsaKey
	default:
		return "", fmt.Errorf("the tool cannot sign with alg %q", algName)
	}
	out, err = jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(headers)))
	return string(out), err
}

// ClientAssertion signs an RFC 7523 client assertion (§2): iss = sub = ClientID, aud,
// iat = now-5s, exp = now+60s, a fresh jti, the deployment_id claim when the deployment is
// known, and the kid header (T-CC-02..06).
func (t *Tool) ClientAssertion(aud string, opts ...AssertionOption) (string, error) {
	cfg := t.Config()
	if cfg.ClientID == "" {
		return "", errors.New("the tool has no client id yet")
	}
	now := time.Now()
	claims := map[string]any{
		"iss": cfg.ClientID, "sub": cfg.ClientID, "aud": aud,
		"iat": now.Add(-5 * time.Second).Unix(), "exp": now.Add(60 * time.Second).Unix(),
		"jti": randomToken(),
	}
	if cfg.DeploymentID != "" {
		claims[ClaimDeploymentID] = cfg.DeploymentID
	}
	return t.sign(claims, t.header(), opts)
}
