package config

import (
	"flag"
	"time"
)

// PlatformData configures the integrator's platform data API in platform mode
// (docs/platform-mode.md): the calls that feed the Names and Roles and Assignment and
// Grades services ltiop serves to tools. They are signed with the notice webhook's secret
// (notices.webhookSecret) and go out under the webhook's outbound policy.
type PlatformData struct {
	// URL is the base URL of the data API; a ToolRegistration's spec.platformDataUrl
	// overrides it. Empty (and no tool naming one): ltiop serves no NRPS or AGS data.
	URL string `json:"url"`
	// Timeout bounds one call; the tool's request waits for it.
	Timeout Duration `json:"timeout"`
	// GrantLifetime is how long the service URLs handed to tools in launches open.
	GrantLifetime Duration `json:"grantLifetime"`
}

// DefaultPlatformData returns the defaults: no data API, 10 s calls, 90-day service URLs.
func DefaultPlatformData() PlatformData {
	return PlatformData{Timeout: Duration{10 * time.Second}, GrantLifetime: Duration{90 * 24 * time.Hour}}
}

func init() {
	settings = append(settings,
		setting{"platform-data-url", "LTIOP_PLATFORM_DATA_URL", "platform mode: base URL of the integrator's platform data API that feeds the NRPS and AGS services ltiop serves (a tool's spec.platformDataUrl overrides it)", func(c *Config) flag.Value { return (*stringValue)(&c.PlatformData.URL) }},
		setting{"platform-data-timeout", "LTIOP_PLATFORM_DATA_TIMEOUT", "platform mode: bound of one platform data API call", func(c *Config) flag.Value { return (*durationValue)(&c.PlatformData.Timeout.Duration) }},
		setting{"platform-data-grant-lifetime", "LTIOP_PLATFORM_DATA_GRANT_LIFETIME", "platform mode: how long the NRPS and AGS service URLs of a launch open", func(c *Config) flag.Value { return (*durationValue)(&c.PlatformData.GrantLifetime.Duration) }},
	)
}

// validatePlatformData checks the platform data settings.
func (c *Config) validatePlatformData(add func(string, ...any)) {
	d := c.PlatformData
	if d.URL != "" {
		if err := c.checkURL(d.URL); err != nil {
			add("platformData.url: %v", err)
		}
	}
	if d.Timeout.Duration <= 0 || d.Timeout.Duration > time.Minute {
		add("platformData.timeout: must be between 0 and 1m, got %s", d.Timeout.Duration)
	}
	if d.GrantLifetime.Duration < time.Hour || d.GrantLifetime.Duration > 400*24*time.Hour {
		add("platformData.grantLifetime: must be between 1h and 9600h, got %s", d.GrantLifetime.Duration)
	}
}
