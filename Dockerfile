# syntax=docker/dockerfile:1
# soapbridge: a static binary on distroless, running as the non-root user.
#   docker build -t soapbridge .
#   docker run -p 8080:8080 -p 8090:8090 -v soapbridge-data:/data soapbridge
# Without SOAPBRIDGE_GATEWAY_URL the embedded sandbox gateway serves on :8090
# (set SOAPBRIDGE_SANDBOX_PUBLIC_URL to the address a browser reaches it at).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/soapbridge ./cmd/soapbridge \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/soapbridge /usr/local/bin/soapbridge
# The SQLite file (and its WAL) live here; owned by nonroot (65532).
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
ENV SOAPBRIDGE_LISTEN=:8080 \
    SOAPBRIDGE_SANDBOX_LISTEN=:8090 \
    SOAPBRIDGE_DATABASE=/data/soapbridge.db
EXPOSE 8080 8090
VOLUME /data
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/soapbridge"]
