// Package registration holds the rules on registrations that the controllers and the web
// server must apply alike: which of two duplicates is in use, and whether a registration's
// key can be used as its method says. The controllers set status from them; the web
// server's read side and platforms API answer from them. One home keeps them in step.
package registration

import (
	"fmt"
	"net/url"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/keys"
	"github.com/ltiop/ltiop/internal/urls"
)

// Older orders registrations by creation time, then name: the first one of a duplicate
// pair (the same (url, clientId) for platforms, the same client id for tools) is the one
// in use, so adding a duplicate never breaks live launches.
func Older(aCreated time.Time, aName string, bCreated time.Time, bName string) bool {
	if !aCreated.Equal(bCreated) {
		return aCreated.Before(bCreated)
	}
	return aName < bName
}

// Owner names whose key a registration holds, for the messages.
type Owner string

// The owners of registration keys.
const (
	OwnerPlatform Owner = "platform"
	OwnerTool     Owner = "tool"
)

// ValidateKey checks that the key of a registration can be used as its method says:
// a PEM or JWK RSA public key, or the URL of a key set (https outside dev mode, no fragment).
func ValidateKey(ac ltiv1.AuthConfig, allowHTTP bool, owner Owner) error {
	var err error
	switch ac.Method {
	case ltiv1.AuthMethodRSAKey:
		if _, err = keys.ParsePublicKeyPEM(ac.Key); err != nil {
			err = fmt.Errorf("RSA_KEY is not a PEM RSA public key: %w", err)
		}
	case ltiv1.AuthMethodJWKKey:
		if _, err = keys.ParsePublicJWK(ac.Key); err != nil {
			err = fmt.Errorf("JWK_KEY is not an RSA public JWK: %w", err)
		}
	case ltiv1.AuthMethodJWKSet:
		if err = urls.Check(ac.Key, allowHTTP); err != nil {
			err = fmt.Errorf("JWK_SET must be the URL of the %s's key set: %w", owner, err)
		} else if u, _ := url.Parse(ac.Key); u.Fragment != "" {
			err = fmt.Errorf("JWK_SET URL must not carry a fragment")
		}
	default:
		err = fmt.Errorf("method %q is not one of JWK_SET, JWK_KEY, RSA_KEY", ac.Method)
	}
	return err
}
