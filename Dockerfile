# syntax=docker/dockerfile:1
# Builds the ltiop manager image:
#   docker build -t registry.example.com/ltiop:v0.1.0 .
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ...

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# A static binary (no cgo) for the distroless image; the build cache is kept between builds.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /ltiop .

# Distroless: no shell, no package manager; CA certificates and tzdata included.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /ltiop /ltiop
# Numeric, so that Kubernetes can check runAsNonRoot.
USER 65532:65532
# 3000: LTI endpoints, API, /healthz and /readyz. 8080: Prometheus /metrics.
EXPOSE 3000 8080
ENTRYPOINT ["/ltiop"]
