package build_test

import (
	"testing"

	"github.com/ltiop/ltiop/test/utils/testmanifests"
)

// hack/build-installer.sh replaces config/default's image (ghcr.io/ltiop/ltiop at the
// chart's appVersion) with the one asked for, by tag or by digest, as the release workflow
// does with the tag and the digest it pushed (name:tag@digest: the digest decides what
// runs, the tag tells a reader which release it is).
func TestInstallerImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, img := range []string{
		"registry.example.com:5000/team/ltiop:v9.8.7",
		"ghcr.io/ltiop/ltiop@" + digest,
		"ghcr.io/ltiop/ltiop:v9.8.7@" + digest,
	} {
		objs, err := testmanifests.Decode([]byte(run(t, "hack/build-installer.sh", img)))
		if err != nil {
			t.Fatal(err)
		}
		dep := objs.Find("Deployment", "ltiop")
		if dep == nil {
			t.Fatalf("%s: no Deployment ltiop", img)
		}
		containers, _ := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
		if len(containers) != 1 || containers[0].(map[string]any)["image"] != img {
			t.Errorf("hack/build-installer.sh %s: containers %v, want that image", img, containers)
		}
	}
}
