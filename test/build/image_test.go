package build_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ltiop/ltiop/test/utils/testenv"
)

// buildImage runs `make image` into dir and returns the name@digest it printed.
func buildImage(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("IMAGE_DIR", dir)
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	return strings.TrimSpace(run(t, "make", "-s", "image", "IMAGE=ghcr.io/ltiop/ltiop:v9.8.7-test", "VERSION=v9.8.7-test",
		"COMMIT=0123456789abcdef0123456789abcdef01234567"))
}

// `make image` builds the image index without Docker, and the same sources build the same
// digests twice: binaries, layers, configs, index and SBOM.
func TestImageIsReproducible(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	a, b := buildImage(t, first), buildImage(t, second)
	if !regexp.MustCompile(`^ghcr\.io/ltiop/ltiop:v9\.8\.7-test@sha256:[0-9a-f]{64}$`).MatchString(a) {
		t.Fatalf("make image printed %q, want the image's name@digest", a)
	}
	if a != b {
		t.Errorf("two builds of the same sources gave two digests:\n%s\n%s", a, b)
	}
	for _, f := range []string{"ltiop.tar", "sbom.cdx.json"} {
		x, err1 := os.ReadFile(filepath.Join(first, f))
		y, err2 := os.ReadFile(filepath.Join(second, f))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", f, err1, err2)
		}
		if string(x) != string(y) {
			t.Errorf("%s differs between two builds", f)
		}
	}
	sbom, _ := os.ReadFile(filepath.Join(first, "sbom.cdx.json"))
	for _, want := range []string{`"bomFormat": "CycloneDX"`, `"name": "github.com/ltiop/ltiop"`, `"version": "v9.8.7-test"`, "sigs.k8s.io/controller-runtime", "github.com/lestrrat-go/jwx/v3"} {
		if !strings.Contains(string(sbom), want) {
			t.Errorf("the SBOM does not contain %s", want)
		}
	}
	checkImage(t, first)
}

// checkImage reads the OCI layout: one image per platform, each with what the Dockerfile's
// image has (user, entrypoint, ports, labels; CA certificates and tzdata; the binary).
func checkImage(t *testing.T, dir string) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "ltiop"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	sort.Strings(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the index holds %v, want linux/amd64 and linux/arm64", platforms)
	}
	docker := dockerfileImage(t)
	for _, m := range manifest.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != m.Platform.Architecture || cfg.OS != "linux" {
			t.Errorf("%s: config says %s/%s", m.Platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Created.Unix() != 1700000000 {
			t.Errorf("%s: created %s, want SOURCE_DATE_EPOCH", m.Platform, cfg.Created)
		}
		c := cfg.Config
		if c.User != docker.user || !slices.Equal(c.Entrypoint, docker.entrypoint) {
			t.Errorf("%s: user %q entrypoint %q; the Dockerfile has %q %q", m.Platform, c.User, c.Entrypoint, docker.user, docker.entrypoint)
		}
		var ports []string
		for p := range c.ExposedPorts {
			ports = append(ports, strings.TrimSuffix(p, "/tcp"))
		}
		sort.Strings(ports)
		if !slices.Equal(ports, docker.ports) {
			t.Errorf("%s: exposes %v; the Dockerfile %v", m.Platform, ports, docker.ports)
		}
		for k, v := range docker.labels {
			if c.Labels[k] != v {
				t.Errorf("%s: label %s=%q; the Dockerfile sets %q", m.Platform, k, c.Labels[k], v)
			}
		}
		files := imageFiles(t, img)
		for _, want := range []string{"ltiop", "etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/Europe/Paris", "etc/passwd", "tmp"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s: the image has no %s", m.Platform, want)
			}
		}
		if h := files["ltiop"]; h != nil && h.Mode&0o111 == 0 {
			t.Errorf("%s: /ltiop is not executable (%o)", m.Platform, h.Mode)
		}
		if h := files["tmp"]; h != nil && h.Mode&0o1777 != 0o1777 {
			t.Errorf("%s: /tmp mode %o, want 1777", m.Platform, h.Mode)
		}
	}
	// The tarball for `ctr images import` is this machine's platform, under the image's name.
	if _, err := tarball.ImageFromPath(filepath.Join(dir, "ltiop.tar"), nil); err != nil {
		t.Errorf("ltiop.tar: %v", err)
	}
}

// imageFiles lists an image's files, flattened, by path without a leading or trailing slash.
func imageFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.Trim(h.Name, "/")] = h
	}
}

// dockerImage is what the Dockerfile's final stage declares.
type dockerImage struct {
	user       string
	entrypoint []string
	ports      []string
	labels     map[string]string
}

// dockerfileImage reads the final stage of the Dockerfile, with its build args at the
// values the image test builds with: `make image` and the Dockerfile are kept in step by
// this comparison.
func dockerfileImage(t *testing.T) dockerImage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	text = strings.NewReplacer("${VERSION}", "v9.8.7-test", "${COMMIT}", "0123456789abcdef0123456789abcdef01234567").Replace(text)
	stages := strings.Split(text, "\nFROM ")
	final := stages[len(stages)-1]
	d := dockerImage{labels: map[string]string{}}
	label := regexp.MustCompile(`([a-z.]+)="([^"]*)"`)
	for _, line := range strings.Split(final, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "USER":
			d.user = f[1]
		case "EXPOSE":
			d.ports = f[1:]
		case "ENTRYPOINT":
			d.entrypoint = []string{strings.Trim(strings.Join(f[1:], " "), `[]"`)}
		case "LABEL":
			for _, m := range label.FindAllStringSubmatch(line, -1) {
				d.labels[m[1]] = m[2]
			}
		}
	}
	sort.Strings(d.ports)
	if d.user == "" || len(d.entrypoint) == 0 || len(d.ports) == 0 || len(d.labels) < 5 {
		t.Fatalf("could not read the Dockerfile's final stage: %+v", d)
	}
	return d
}
