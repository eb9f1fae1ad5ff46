// Package urls holds the one rule ltiop applies to every URL it is configured with or
// registers: absolute, https (http only in dev mode), a host and no user information. It
// imports nothing of Kubernetes, so the pure protocol packages can use it.
package urls

import (
	"fmt"
	"net/url"
)

// Check accepts an absolute https URL with a host, or an http one when allowHTTP is set.
func Check(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	case u.Scheme == "http":
		return fmt.Errorf("%q must use https (http is accepted only in dev mode)", raw)
	default:
		return fmt.Errorf("%q must be an absolute https URL", raw)
	}
	if u.Host == "" || u.User != nil {
		return fmt.Errorf("%q must have a host and no user information", raw)
	}
	return nil
}
