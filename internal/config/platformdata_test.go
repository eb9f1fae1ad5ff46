package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
)

func TestPlatformDataSettings(t *testing.T) {
	isolate(t)
	cfg := mustLoad(t, []string{"--platform-data-url", "https://learn.example.edu/ltiop-data", "--platform-data-timeout", "3s",
		"--platform-data-grant-lifetime", "720h"}, base())
	d := cfg.PlatformData
	if d.URL != "https://learn.example.edu/ltiop-data" || d.Timeout.Duration != 3*time.Second || d.GrantLifetime.Duration != 720*time.Hour {
		t.Errorf("platformData = %+v", d)
	}
	if def := config.DefaultPlatformData(); def.URL != "" || def.Timeout.Duration != 10*time.Second || def.GrantLifetime.Duration != 90*24*time.Hour {
		t.Errorf("defaults = %+v", def)
	}
}

func TestPlatformDataSettingsRefused(t *testing.T) {
	isolate(t)
	for flag, value := range map[string]string{
		"--platform-data-url": "ftp://learn.example.edu", "--platform-data-timeout": "5m", "--platform-data-grant-lifetime": "10m",
	} {
		_, err := config.Load([]string{flag, value}, base().get)
		if err == nil || !strings.Contains(err.Error(), "platformData.") {
			t.Errorf("%s %s: %v, want a platformData error", flag, value, err)
		}
	}
}
