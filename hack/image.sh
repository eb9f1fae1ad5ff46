#!/usr/bin/env bash
# `make image`: builds ltiop's container image without a Docker daemon, the equivalent of the
# Dockerfile (same static binary, flags, labels, user, ports and entrypoint, on a base with
# the same content as distroless/static: CA certificates, tzdata, nonroot 65532, /tmp).
# Writes, under bin/image/:
#   ltiop/          an OCI image layout holding the image index of PLATFORMS (what a release pushes)
#   ltiop.tar       this machine's platform, for `ctr images import` (the test cluster loads it)
#   sbom.cdx.json   a CycloneDX SBOM of the binary (cyclonedx-gomod, a go tool)
# and prints the image's name@digest. Reproducible: the same commit gives the same digest
# (every timestamp is SOURCE_DATE_EPOCH, by default the commit's time).
# Usage: hack/image.sh IMAGE VERSION COMMIT [PLATFORMS] (the Makefile passes them)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
img=${1:?usage: hack/image.sh IMAGE VERSION COMMIT [PLATFORMS]}
version=${2:?} commit=${3:?}
platforms=${4:-linux/amd64,linux/arm64}
out=${IMAGE_DIR:-bin/image}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
mkdir -p "$out"
ldflags="-s -w -X github.com/ltiop/ltiop/internal/version.Version=$version -X github.com/ltiop/ltiop/internal/version.Commit=$commit"
binaries=()
for platform in ${platforms//,/ }; do
  os=${platform%%/*} arch=${platform#*/}
  bin="$out/$os-$arch/ltiop"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags="$ldflags" -o "$bin" .
  binaries+=("$platform=$bin")
done
go run ./hack/ociimage -ref "$img" -out "$out/ltiop" -tar "$out/ltiop.tar" \
  -base static -user 65532:65532 -entrypoint /ltiop -port 3000 -port 8080 \
  -label org.opencontainers.image.title=ltiop \
  -label "org.opencontainers.image.description=LTI 1.3 / LTI Advantage service shipped as a Kubernetes operator" \
  -label org.opencontainers.image.licenses=Apache-2.0 \
  -label "org.opencontainers.image.version=$version" \
  -label "org.opencontainers.image.revision=$commit" \
  -label org.opencontainers.image.source=https://github.com/ltiop/ltiop \
  "${binaries[@]}"
# Without serial number and timestamp, so that the SBOM too is the same for the same commit.
go tool cyclonedx-gomod bin -json -noserial -notimestamp -version "$version" -output "$out/sbom.cdx.json" "${binaries[0]#*=}"
