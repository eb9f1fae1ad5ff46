package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
)

// withNoticeDefaults completes an expected configuration with the notice defaults: the
// webhook secret in the API key's Secret.
func withNoticeDefaults(c *config.Config) {
	c.Notices = config.DefaultNotices()
	c.Notices.WebhookSecret = c.APIKeySecret
	c.PlatformData = config.DefaultPlatformData() // platformdata_test.go covers its settings
	if c.RateLimits.Notices == (config.RateLimit{}) {
		c.RateLimits.Notices = config.DefaultNoticeRateLimit
	}
}

func TestNoticeSettings(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, []string{"--notice-webhook-url", "https://app.example.com/hooks/lti", "--notice-webhook-secret", "hooks",
		"--notice-webhook-secret-key", "whsec", "--notice-webhook-timeout", "3s", "--notice-key-lifetime", "30m",
		"--notice-max-batch", "10", "--rate-limit-notices", "5/50"}, base())
	n := cfg.Notices
	if n.WebhookURL != "https://app.example.com/hooks/lti" || n.WebhookSecret != "hooks" || n.WebhookSecretKey != "whsec" ||
		n.WebhookTimeout.Duration != 3*time.Second || n.KeyLifetime.Duration != 30*time.Minute || n.MaxBatch != 10 ||
		cfg.RateLimits.Notices != (config.RateLimit{Rate: 5, Burst: 50}) {
		t.Errorf("notices = %+v, rate limit %+v", n, cfg.RateLimits.Notices)
	}
}

func TestNoticeSettingsRefused(t *testing.T) {
	isolate(t)
	for flag, value := range map[string]string{
		"--notice-webhook-url": "ftp://app.example.com", "--notice-webhook-timeout": "5m", "--notice-key-lifetime": "10s",
		"--notice-max-batch": "0", "--notice-webhook-secret": "Not_A_Name",
	} {
		_, err := config.Load([]string{flag, value}, base().get)
		if err == nil || !strings.Contains(err.Error(), "notices.") {
			t.Errorf("%s %s: %v, want a notices error", flag, value, err)
		}
	}
}
