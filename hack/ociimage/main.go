// Command ociimage assembles a container image from static binaries, without a Docker
// daemon: one image per platform, gathered in an OCI image index, written as an OCI image
// layout (what a registry push takes) and, for this machine's platform, as a tarball a
// container runtime imports (`ctr images import`).
//
// The result is reproducible: every timestamp is -created (SOURCE_DATE_EPOCH), every file is
// owned by root with fixed modes, entries are sorted, so the same binaries give the same
// digests. `make image` builds ltiop's image with it; hack/nodecluster builds the pause and
// CoreDNS images of the test cluster the same way.
//
//	ociimage -ref ghcr.io/ltiop/ltiop:v1 -out bin/image/ltiop -tar bin/image/ltiop.tar \
//	  -base static -user 65532:65532 -entrypoint /ltiop -label k=v -port 3000 \
//	  linux/amd64=bin/image/linux-amd64/ltiop linux/arm64=bin/image/linux-arm64/ltiop
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ociimage", flag.ContinueOnError)
	ref := fs.String("ref", "", "the image's name and tag (required)")
	out := fs.String("out", "", "directory to write the OCI image layout to (required; replaced)")
	tarPath := fs.String("tar", "", "also write this machine's platform as a tarball for `ctr images import`")
	base := fs.String("base", "static", "static (CA certificates, tzdata, passwd with nonroot 65532, /tmp) or none")
	user := fs.String("user", "", "the user the container runs as, numeric uid:gid")
	entrypoint := fs.String("entrypoint", "", "where the binary goes, and the entrypoint (required)")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "timestamp of every file and of the image, in Unix seconds (default SOURCE_DATE_EPOCH)")
	var labels, ports, cmd, files listFlag
	fs.Var(&labels, "label", "an image label key=value (repeatable)")
	fs.Var(&ports, "port", "an exposed TCP port (repeatable)")
	fs.Var(&cmd, "arg", "a default argument after the entrypoint (repeatable)")
	fs.Var(&files, "file", "another file SRC:DEST in every platform's image, e.g. a shared library (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" || *out == "" || *entrypoint == "" || fs.NArg() == 0 {
		return errors.New("usage: ociimage -ref REF -out DIR -entrypoint PATH [flags] os/arch=BINARY [os/arch=BINARY]")
	}
	tag, err := name.NewTag(*ref)
	if err != nil {
		return fmt.Errorf("-ref: %w", err)
	}
	epoch, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created (or SOURCE_DATE_EPOCH) must be Unix seconds, got %q", *created)
	}
	when := time.Unix(epoch, 0).UTC()

	cfg := v1.Config{
		User:       *user,
		Entrypoint: []string{*entrypoint},
		Cmd:        cmd,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/",
		Labels:     map[string]string{},
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("-label %q: want key=value", l)
		}
		cfg.Labels[k] = v
	}
	if len(ports) > 0 {
		cfg.ExposedPorts = map[string]struct{}{}
		for _, p := range ports {
			cfg.ExposedPorts[p+"/tcp"] = struct{}{}
		}
	}

	var baseLayer v1.Layer
	switch *base {
	case "static":
		if baseLayer, err = staticBase(when); err != nil {
			return err
		}
	case "none":
	default:
		return fmt.Errorf("-base %q: want static or none", *base)
	}
	var filesLayer v1.Layer
	if len(files) > 0 {
		var entries []entry
		for _, f := range files {
			src, dest, ok := strings.Cut(f, ":")
			if !ok || !strings.HasPrefix(dest, "/") {
				return fmt.Errorf("-file %q: want SRC:/DEST", f)
			}
			data, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			entries = append(entries, entry{path: dest, mode: 0o755, data: data})
		}
		if filesLayer, err = layer(when, entries); err != nil {
			return err
		}
	}

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var hostImage v1.Image
	platforms := fs.Args()
	sort.Strings(platforms)
	for _, arg := range platforms {
		spec, binary, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want os/arch=BINARY", arg)
		}
		platform, err := v1.ParsePlatform(spec)
		if err != nil {
			return err
		}
		img, err := platformImage(*platform, cfg, when, []v1.Layer{baseLayer, filesLayer}, binary, *entrypoint)
		if err != nil {
			return fmt.Errorf("%s: %w", spec, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
		if platform.OS == "linux" && platform.Architecture == runtime.GOARCH {
			hostImage = img
		}
	}

	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if _, err := layout.Write(*out, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *tarPath != "" {
		if hostImage == nil {
			return fmt.Errorf("-tar: no linux/%s binary given", runtime.GOARCH)
		}
		if err := tarball.WriteToFile(*tarPath, tag, hostImage); err != nil {
			return err
		}
	}
	fmt.Printf("%s@%s\n", tag.Name(), digest)
	return nil
}

// platformImage is one platform's image: the layers given (nil ones skipped) and the binary.
func platformImage(p v1.Platform, cfg v1.Config, when time.Time, layers []v1.Layer, binary, at string) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer(when, []entry{{path: at, mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range append(layers, binLayer) {
		if l == nil {
			continue
		}
		if img, err = mutate.Append(img, mutate.Addendum{
			Layer:     l,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: when}, CreatedBy: "hack/ociimage"},
		}); err != nil {
			return nil, err
		}
	}
	file, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	file = file.DeepCopy()
	file.Config = cfg
	file.Created = v1.Time{Time: when}
	file.OS, file.Architecture, file.Variant, file.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	return mutate.ConfigFile(img, file)
}
