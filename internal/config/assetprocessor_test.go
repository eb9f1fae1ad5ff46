package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ltiop/ltiop/internal/config"
)

func TestAssetProcessorSettings(t *testing.T) {
	isolate(t)
	// Defaults: off, 100 MiB, 2 minutes, no per-message pages.
	cfg := mustLoad(t, nil, base())
	if cfg.AssetProcessor.Enabled || cfg.AssetProcessor.MaxAssetBytesOrDefault() != 100<<20 ||
		cfg.AssetProcessor.DownloadTimeoutOrDefault() != 2*time.Minute || len(cfg.MessageLaunchURLs) != 0 {
		t.Fatalf("defaults: %+v %v", cfg.AssetProcessor, cfg.MessageLaunchURLs)
	}
	// The environment, a flag and the YAML file.
	cfg = mustLoad(t, []string{"--asset-processor-max-asset-bytes", "2048"}, base().with(
		"LTIOP_ASSET_PROCESSOR_ENABLED", "true", "LTIOP_ASSET_PROCESSOR_DOWNLOAD_TIMEOUT", "5m",
		"LTIOP_MESSAGE_LAUNCH_URLS", "LtiEulaRequest=https://app.example.com/eula, LtiReportReviewRequest=https://app.example.com/report?x=1"))
	if !cfg.AssetProcessor.Enabled || cfg.AssetProcessor.MaxAssetBytesOrDefault() != 2048 || cfg.AssetProcessor.DownloadTimeoutOrDefault() != 5*time.Minute {
		t.Errorf("settings: %+v", cfg.AssetProcessor)
	}
	if cfg.MessageLaunchURLs["LtiEulaRequest"] != "https://app.example.com/eula" || cfg.MessageLaunchURLs["LtiReportReviewRequest"] != "https://app.example.com/report?x=1" {
		t.Errorf("messageLaunchUrls: %v", cfg.MessageLaunchURLs)
	}
	file := writeYAML(t, "messageLaunchUrls:\n  LtiAssetProcessorSettingsRequest: https://app.example.com/settings\nassetProcessor:\n  enabled: true\n  maxAssetBytes: 4096\n")
	cfg = mustLoad(t, []string{"--config", file}, base())
	if cfg.MessageLaunchURLs["LtiAssetProcessorSettingsRequest"] != "https://app.example.com/settings" || cfg.AssetProcessor.MaxAssetBytes != 4096 {
		t.Errorf("YAML: %+v %v", cfg.AssetProcessor, cfg.MessageLaunchURLs)
	}
}

func TestAssetProcessorSettingsRefused(t *testing.T) {
	isolate(t)
	for name, tc := range map[string]struct {
		env  env
		want string
	}{
		"unknown message type": {base().with("LTIOP_MESSAGE_LAUNCH_URLS", "LtiEulaReqest=https://app.example.com/eula"), `messageLaunchUrls: unknown message type "LtiEulaReqest"`},
		"http URL":             {base().with("LTIOP_MESSAGE_LAUNCH_URLS", "LtiEulaRequest=http://app.example.com/eula"), "messageLaunchUrls.LtiEulaRequest"},
		"no URL":               {base().with("LTIOP_MESSAGE_LAUNCH_URLS", "LtiEulaRequest"), "Type=URL"},
		"negative size":        {base().with("LTIOP_ASSET_PROCESSOR_MAX_ASSET_BYTES", "-1"), "assetProcessor.maxAssetBytes"},
		"negative timeout":     {base().with("LTIOP_ASSET_PROCESSOR_DOWNLOAD_TIMEOUT", "-1s"), "assetProcessor.downloadTimeout"},
	} {
		_, err := config.Load(nil, tc.env.get)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}
