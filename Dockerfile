# The oamflow-controller image, for `docker build .`. `make image` builds the
# same image without a Docker daemon (hack/image; its tests check that this
# file stays equivalent): a static binary and the CA certificates on scratch,
# run as user 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -tags=kustomize_disable_go_plugin_support -ldflags="-s -w -buildid=" -o /out/oamflow-controller ./cmd/oamflow-controller

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="oamflow-controller" \
      org.opencontainers.image.description="oamflow application delivery controller (KubeVela-compatible OAM Applications)" \
      org.opencontainers.image.source="https://github.com/oamflow/oamflow" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/oamflow-controller /oamflow-controller
ENV PATH=/
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
ENTRYPOINT ["/oamflow-controller"]
