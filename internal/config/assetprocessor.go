package config

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// AssetProcessor configures LTI Asset Processor and the EULA service (docs/asset-processor.md).
type AssetProcessor struct {
	// Enabled advertises the Asset Processor and EULA message types and scopes in dynamic
	// registration (and the Canvas configuration). The services work for any launch or notice
	// that carries their claims either way.
	Enabled bool `json:"enabled"`
	// MaxAssetBytes bounds one asset download; zero means 100 MiB.
	MaxAssetBytes int64 `json:"maxAssetBytes"`
	// DownloadTimeout bounds one asset download, body included; zero means 2 minutes.
	DownloadTimeout Duration `json:"downloadTimeout"`
}

// Defaults of AssetProcessor's zero values.
const (
	DefaultMaxAssetBytes   = 100 << 20
	DefaultDownloadTimeout = 2 * time.Minute
)

// MaxAssetBytesOrDefault is MaxAssetBytes, or its default when unset.
func (a AssetProcessor) MaxAssetBytesOrDefault() int64 {
	if a.MaxAssetBytes > 0 {
		return a.MaxAssetBytes
	}
	return DefaultMaxAssetBytes
}

// DownloadTimeoutOrDefault is DownloadTimeout, or its default when unset.
func (a AssetProcessor) DownloadTimeoutOrDefault() time.Duration {
	if a.DownloadTimeout.Duration > 0 {
		return a.DownloadTimeout.Duration
	}
	return DefaultDownloadTimeout
}

// launchMessageTypes are the message types messageLaunchUrls may name.
var launchMessageTypes = []string{"LtiResourceLinkRequest", "LtiDeepLinkingRequest", "LtiSubmissionReviewRequest",
	"LtiAssetProcessorSettingsRequest", "LtiReportReviewRequest", "LtiEulaRequest"}

func init() {
	settings = append(settings,
		setting{"message-launch-urls", "LTIOP_MESSAGE_LAUNCH_URLS", "integrator pages by message type, as Type=URL,Type=URL (e.g. LtiEulaRequest=https://app.example.com/eula); other types go to the launch URL",
			func(c *Config) flag.Value { return (*messageURLsValue)(&c.MessageLaunchURLs) }},
		setting{"asset-processor-enabled", "LTIOP_ASSET_PROCESSOR_ENABLED", "advertise Asset Processor and EULA message types and scopes in dynamic registration",
			func(c *Config) flag.Value { return (*boolValue)(&c.AssetProcessor.Enabled) }},
		setting{"asset-processor-max-asset-bytes", "LTIOP_ASSET_PROCESSOR_MAX_ASSET_BYTES", "largest asset /api/assets streams (default 100 MiB)",
			func(c *Config) flag.Value { return (*int64Value)(&c.AssetProcessor.MaxAssetBytes) }},
		setting{"asset-processor-download-timeout", "LTIOP_ASSET_PROCESSOR_DOWNLOAD_TIMEOUT", "bound of one asset download, body included (default 2m)",
			func(c *Config) flag.Value { return (*durationValue)(&c.AssetProcessor.DownloadTimeout.Duration) }},
	)
}

func (c *Config) validateAssetProcessor(add func(string, ...any)) {
	for _, mt := range slices.Sorted(maps.Keys(c.MessageLaunchURLs)) {
		if !slices.Contains(launchMessageTypes, mt) {
			add("messageLaunchUrls: unknown message type %q (one of %s)", mt, strings.Join(launchMessageTypes, ", "))
			continue
		}
		if err := c.checkURL(c.MessageLaunchURLs[mt]); err != nil {
			add("messageLaunchUrls.%s: %v", mt, err)
		}
	}
	if c.AssetProcessor.MaxAssetBytes < 0 {
		add("assetProcessor.maxAssetBytes: must not be negative")
	}
	if c.AssetProcessor.DownloadTimeout.Duration < 0 {
		add("assetProcessor.downloadTimeout: must not be negative")
	}
}

// messageURLsValue is a map written Type=URL,Type=URL.
type messageURLsValue map[string]string

func (v *messageURLsValue) Set(s string) error {
	m := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, u, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("message launch URLs %q: want Type=URL,Type=URL", s)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(u)
	}
	*v = m
	return nil
}

func (v *messageURLsValue) String() string {
	parts := make([]string, 0, len(*v))
	for _, k := range slices.Sorted(maps.Keys(*v)) {
		parts = append(parts, k+"="+(*v)[k])
	}
	return strings.Join(parts, ",")
}
