# syntax=docker/dockerfile:1
# Builds the ltiop manager image; `make docker-build IMG=...` passes VERSION and COMMIT:
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t registry.example.com/ltiop:v0.1.0 .
# Multi-platform: make docker-buildx (docker buildx build --platform linux/amd64,linux/arm64 ...).
# Without Docker, `make image` builds the equivalent image (hack/image.sh: the same binary and
# flags, user, ports, entrypoint and labels, on a base with distroless/static's content); the
# release is built that way. test/build's TestImageIsReproducible reads this file's final
# stage and fails when the two differ: change both together.

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# What `ltiop --version`, the start log line and ltiop_build_info report (.git is not in
# the build context, so the Makefile passes them). Declared here, after the module
# download, so that a new version does not invalidate that layer.
ARG VERSION=dev
ARG COMMIT=unknown
# A static binary (no cgo) for the distroless image; the build cache is kept between builds.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath \
      -ldflags="-s -w -X github.com/ltiop/ltiop/internal/version.Version=${VERSION} -X github.com/ltiop/ltiop/internal/version.Commit=${COMMIT}" \
      -o /ltiop .

# Distroless: no shell, no package manager; CA certificates and tzdata included.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="ltiop" \
      org.opencontainers.image.description="LTI 1.3 / LTI Advantage service shipped as a Kubernetes operator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/ltiop/ltiop" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=builder /ltiop /ltiop
# Numeric, so that Kubernetes can check runAsNonRoot.
USER 65532:65532
# 3000: LTI endpoints, API, /healthz and /readyz. 8080: Prometheus /metrics.
EXPOSE 3000 8080
ENTRYPOINT ["/ltiop"]
