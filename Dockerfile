# syntax=docker/dockerfile:1
# soapbridge: a static binary on an empty base image, running as a non-root
# user, checked by its own health check.
#   docker build -t soapbridge .
#   docker run -p 8080:8080 -v soapbridge-data:/data \
#     -e SOAPBRIDGE_GATEWAY_URL=... -e SOAPBRIDGE_PUBLIC_URL=... -e SOAPBRIDGE_GOID=... soapbridge
# Without a gateway URL and without merchants the demo runs on the embedded
# sandbox gateway, which listens on loopback inside the container and is not
# exposed. To try the demo from a browser, see deploy/compose.demo.yaml.
#
# Base images: the build image is named in full (registry, exact Go
# version) so that stricter engines (podman) accept it and a rebuild gets the
# same toolchain; go.mod's go line names the same version. The runtime image
# is `scratch` (nothing to pull or pin): the binary is static and the CA
# bundle comes from the pinned build image.

FROM docker.io/library/golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/soapbridge ./cmd/soapbridge \
 && mkdir -p /out/data /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/soapbridge /usr/local/bin/soapbridge
# The SQLite file (and its WAL) live here, created 0600, owned by 65532.
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/tmp /tmp
WORKDIR /data
ENV SOAPBRIDGE_LISTEN=:8080 \
    SOAPBRIDGE_DATABASE=/data/soapbridge.db
EXPOSE 8080
VOLUME /data
USER 65532:65532
# No shell in the image: the binary checks itself (GET /healthz on the
# address SOAPBRIDGE_LISTEN names, through loopback).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["/usr/local/bin/soapbridge", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/soapbridge"]
