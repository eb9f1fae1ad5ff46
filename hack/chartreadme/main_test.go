package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const chartDir = "../../charts/ltiop"

// The checked-in README is what hack/chart-readme.sh writes from the schema and values.
func TestChartREADMEIsCurrent(t *testing.T) {
	want, err := render(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("charts/ltiop/README.md is not current: run hack/chart-readme.sh")
	}
	for _, key := range []string{"`publicUrl` | string | (required)", "`serviceAccount.annotations`", "`config`", "`replayStore.redis.image.tag` | string | `\"7.4-alpine\"`"} {
		if !strings.Contains(string(want), key) {
			t.Errorf("the README has no row %s", key)
		}
	}
}

// A value without a description is refused, so every value is explained.
func TestChartREADMENeedsDescriptions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "values.schema.json"), []byte(`{"properties":{"a":{"type":"string"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("a: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := render(dir); err == nil || !strings.Contains(err.Error(), "a has no description") {
		t.Errorf("render = %v, want a refusal naming a", err)
	}
}
