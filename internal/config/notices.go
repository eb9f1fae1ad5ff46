package config

import (
	"flag"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Notices configures the Platform Notification Service in tool mode (docs/notices.md):
// notices the platforms post to ltiop are delivered to the integrator's webhook.
type Notices struct {
	// WebhookURL receives every registration's notices unless the registration names its
	// own (spec.noticeWebhookUrl). Empty, with no registration naming one: notices are
	// refused (503) and dynamic registration does not offer them.
	WebhookURL string `json:"webhookUrl"`
	// WebhookSecret names the Secret holding the Standard Webhooks signing secret
	// ("whsec_" and base64, 24 to 64 bytes) under WebhookSecretKey; empty means the API
	// key's Secret (apiKeySecret).
	WebhookSecret    string `json:"webhookSecret"`
	WebhookSecretKey string `json:"webhookSecretKey"`
	// WebhookTimeout bounds one delivery; the platform's request waits for it.
	WebhookTimeout Duration `json:"webhookTimeout"`
	// KeyLifetime is how long the notice key handed over in a webhook opens.
	KeyLifetime Duration `json:"keyLifetime"`
	// MaxBatch is the most notices one POST from a platform may carry.
	MaxBatch int `json:"maxBatch"`
}

// DefaultNotices returns the defaults: no webhook; the secret in the API key's Secret (WebhookSecret empty)
// under webhookSecret.
func DefaultNotices() Notices {
	return Notices{WebhookSecretKey: "webhookSecret",
		WebhookTimeout: Duration{10 * time.Second}, KeyLifetime: Duration{time.Hour}, MaxBatch: 100}
}

// DefaultNoticeRateLimit is the per-client-IP limit of the notice endpoint: a platform
// sends notices in bursts (a whole class submitting at a deadline).
var DefaultNoticeRateLimit = RateLimit{Rate: 50, Burst: 1000}

func init() {
	settings = append(settings,
		setting{"notice-webhook-url", "LTIOP_NOTICE_WEBHOOK_URL", "integrator URL that receives platform notices as Standard Webhooks (a registration's spec.noticeWebhookUrl overrides it)", func(c *Config) flag.Value { return (*stringValue)(&c.Notices.WebhookURL) }},
		setting{"notice-webhook-secret", "LTIOP_NOTICE_WEBHOOK_SECRET", "name of the Secret holding the webhook signing secret, whsec_… (default: the API key Secret)", func(c *Config) flag.Value { return (*stringValue)(&c.Notices.WebhookSecret) }},
		setting{"notice-webhook-secret-key", "LTIOP_NOTICE_WEBHOOK_SECRET_KEY", "data key of the webhook signing secret inside that Secret", func(c *Config) flag.Value { return (*stringValue)(&c.Notices.WebhookSecretKey) }},
		setting{"notice-webhook-timeout", "LTIOP_NOTICE_WEBHOOK_TIMEOUT", "bound of one webhook delivery", func(c *Config) flag.Value { return (*durationValue)(&c.Notices.WebhookTimeout.Duration) }},
		setting{"notice-key-lifetime", "LTIOP_NOTICE_KEY_LIFETIME", "how long the notice key handed over in a webhook opens", func(c *Config) flag.Value { return (*durationValue)(&c.Notices.KeyLifetime.Duration) }},
		setting{"notice-max-batch", "LTIOP_NOTICE_MAX_BATCH", "most notices one platform POST may carry", func(c *Config) flag.Value { return (*intValue)(&c.Notices.MaxBatch) }},
		setting{"rate-limit-notices", "LTIOP_RATE_LIMIT_NOTICES", "per-client-IP limit of /lti/notices/{platformId} as rate/burst; 0 turns it off", func(c *Config) flag.Value { return (*rateLimitValue)(&c.RateLimits.Notices) }},
	)
}

// validateNotices checks the notice settings.
func (c *Config) validateNotices(add func(string, ...any)) {
	if c.Notices.WebhookSecret == "" {
		c.Notices.WebhookSecret = c.APIKeySecret
	}
	n := c.Notices
	if n.WebhookURL != "" {
		if err := c.checkURL(n.WebhookURL); err != nil {
			add("notices.webhookUrl: %v", err)
		}
	}
	if msgs := validation.IsDNS1123Subdomain(n.WebhookSecret); len(msgs) > 0 {
		add("notices.webhookSecret %q: %s", n.WebhookSecret, strings.Join(msgs, "; "))
	}
	if n.WebhookSecretKey == "" {
		add("notices.webhookSecretKey: required")
	}
	if n.WebhookTimeout.Duration <= 0 || n.WebhookTimeout.Duration > time.Minute {
		add("notices.webhookTimeout: must be between 0 and 1m, got %s", n.WebhookTimeout.Duration)
	}
	if n.KeyLifetime.Duration < time.Minute || n.KeyLifetime.Duration > 7*24*time.Hour {
		add("notices.keyLifetime: must be between 1m and 168h, got %s", n.KeyLifetime.Duration)
	}
	if n.MaxBatch < 1 || n.MaxBatch > 1000 {
		add("notices.maxBatch: must be between 1 and 1000, got %d", n.MaxBatch)
	}
}
