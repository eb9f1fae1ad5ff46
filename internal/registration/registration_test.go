package registration_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
	"github.com/ltiop/ltiop/internal/registration"
)

func TestOlderKeepsTheFirstCreated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name              string
		aCreated, bCreate time.Time
		aName, bName      string
		want              bool
	}{
		{"earlier wins", t0, t0.Add(time.Second), "z", "a", true},
		{"later loses", t0.Add(time.Second), t0, "a", "z", false},
		{"same second: the name decides", t0, t0, "a", "b", true},
		{"same second, other order", t0, t0, "b", "a", false},
		{"itself is not older", t0, t0, "a", "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := registration.Older(tc.aCreated, tc.aName, tc.bCreate, tc.bName); got != tc.want {
				t.Errorf("Older = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateKey(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))

	for _, tc := range []struct {
		name      string
		ac        ltiv1.AuthConfig
		allowHTTP bool
		owner     registration.Owner
		wantErr   string // "" means accepted
	}{
		{"key set URL", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://lms.example/jwks"}, false, registration.OwnerPlatform, ""},
		{"http key set in dev mode", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "http://localhost/jwks"}, true, registration.OwnerTool, ""},
		{"http key set outside dev mode", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "http://lms.example/jwks"}, false, registration.OwnerTool, "URL of the tool's key set"},
		{"key set URL with a fragment", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKSet, Key: "https://lms.example/jwks#x"}, false, registration.OwnerPlatform, "fragment"},
		{"PEM key", ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: pemKey}, false, registration.OwnerPlatform, ""},
		{"not a PEM key", ltiv1.AuthConfig{Method: ltiv1.AuthMethodRSAKey, Key: "hello"}, false, registration.OwnerPlatform, "not a PEM RSA public key"},
		{"not a JWK", ltiv1.AuthConfig{Method: ltiv1.AuthMethodJWKKey, Key: "{}"}, false, registration.OwnerPlatform, "not an RSA public JWK"},
		{"unknown method", ltiv1.AuthConfig{Method: "PASSWORD", Key: "x"}, false, registration.OwnerPlatform, "not one of JWK_SET, JWK_KEY, RSA_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := registration.ValidateKey(tc.ac, tc.allowHTTP, tc.owner)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ValidateKey = %v, want accepted", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ValidateKey = %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
