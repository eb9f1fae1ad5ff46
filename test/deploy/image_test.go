package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ltiop/ltiop/test/utils/testenv"
	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// The repository the release workflow pushes and signs (.github/workflows/release.yaml).
const releaseRepository = "ghcr.io/ltiop/ltiop"

func appVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testmanifests.ChartDir(testenv.Root()), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion = %q (%v)", chart.AppVersion, err)
	}
	return chart.AppVersion
}

// Without image values the chart runs the published image at its appVersion, and so does
// config/default (the bundle and kustomize installs): the two may not drift apart when
// the version moves.
func TestDefaultImageIsThePublishedOne(t *testing.T) {
	want := releaseRepository + ":" + appVersion(t)
	if got := ltiopContainer(t, render(t, map[string]any{}))["image"]; got != want {
		t.Errorf("the chart's default image is %v, want %s", got, want)
	}
	objs, err := testmanifests.Kustomize(filepath.Join(testenv.Root(), "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ltiopContainer(t, objs)["image"]; got != want {
		t.Errorf("config/default's image is %v, want %s (the chart's appVersion)", got, want)
	}
}

// image.digest pins the image by content: it wins over the tag, whatever the tag says.
func TestChartImageDigest(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name  string
		image map[string]any
		want  string
	}{
		{"a tag", map[string]any{"tag": "v9.8.7"}, releaseRepository + ":v9.8.7"},
		{"another registry", map[string]any{"repository": "registry.example.com:5000/team/ltiop", "tag": "dev"},
			"registry.example.com:5000/team/ltiop:dev"},
		{"a digest", map[string]any{"digest": digest}, releaseRepository + "@" + digest},
		{"a digest and a tag", map[string]any{"tag": "v9.8.7", "digest": digest}, releaseRepository + "@" + digest},
		{"a digest in another registry", map[string]any{"repository": "registry.example.com/ltiop", "digest": digest},
			"registry.example.com/ltiop@" + digest},
		{"an empty digest", map[string]any{"tag": "v1", "digest": ""}, releaseRepository + ":v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ltiopContainer(t, render(t, map[string]any{"image": tc.image}))["image"]; got != tc.want {
				t.Errorf("image %v renders %v, want %s", tc.image, got, tc.want)
			}
		})
	}
	// The schema refuses what is not a sha256 digest: a tag, a short or upper-case hash, or
	// the whole reference.
	for _, bad := range []string{"v1.0.0", "sha256:0123", "sha256:" + strings.Repeat("A", 64), "sha512:" + strings.Repeat("a", 64),
		releaseRepository + "@" + digest} {
		_, err := testmanifests.Chart(testmanifests.ChartDir(testenv.Root()), "ltiop", chartNamespace,
			map[string]any{"publicUrl": "https://lti.example.com", "image": map[string]any{"digest": bad}})
		if err == nil || !strings.Contains(err.Error(), "digest") {
			t.Errorf("image.digest %q: %v, want a refusal naming digest", bad, err)
		}
	}
}

// The release workflow pushes and signs the repository the chart and the manifests name, and
// the identity docs/install.md tells users to verify is the one that workflow signs with.
func TestReleaseWorkflowPublishesTheDefaultImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), ".github", "workflows", "release.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var workflow struct {
		Env         map[string]string `json:"env"`
		Permissions map[string]string `json:"permissions"`
	}
	if err := yaml.Unmarshal(raw, &workflow); err != nil {
		t.Fatal(err)
	}
	if workflow.Env["IMAGE"] != releaseRepository {
		t.Errorf("the release workflow pushes %q, the chart's default is %s", workflow.Env["IMAGE"], releaseRepository)
	}
	for scope, want := range map[string]string{"contents": "write", "packages": "write", "id-token": "write"} {
		if workflow.Permissions[scope] != want {
			t.Errorf("the release workflow's permission %s is %q, want %s", scope, workflow.Permissions[scope], want)
		}
	}
	doc, err := os.ReadFile(filepath.Join(testenv.Root(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--certificate-identity-regexp '([^']+)'`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/install.md shows no cosign verify --certificate-identity-regexp")
	}
	identity, err := regexp.Compile("^" + string(m[1]) + "$")
	if err != nil {
		t.Fatal(err)
	}
	// What Fulcio puts in the certificate: the workflow's path at the pushed tag.
	for ref, want := range map[string]bool{
		"https://github.com/ltiop/ltiop/.github/workflows/release.yaml@refs/tags/v0.1.0":      true,
		"https://github.com/ltiop/ltiop/.github/workflows/release.yaml@refs/tags/v1.2.3-rc.1": true,
		"https://github.com/ltiop/ltiop/.github/workflows/release.yaml@refs/heads/main":       false,
		"https://github.com/ltiop/ltiop/.github/workflows/ci.yaml@refs/tags/v0.1.0":           false,
	} {
		if identity.MatchString(ref) != want {
			t.Errorf("the documented identity %q matches %s: %v, want %v", m[1], ref, !want, want)
		}
	}
}
