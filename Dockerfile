# syntax=docker/dockerfile:1
# Dockerfile: the toolscript server image.
#
#   docker build -t toolscript:dev .
#   docker build --build-arg VERSION=v1.2.3 -t toolscript:v1.2.3 .
#   docker run --rm -p 8080:8080 toolscript:dev serve --http :8080 --stateless \
#       --auth-authority https://auth.example.com --auth-audience https://toolscript.example.com
#
# A static Go binary (CGO off: the Luau module is wasm/luau.wasm, embedded,
# so no C toolchain is needed) on distroless, run as the unprivileged
# "nonroot" user (65532). wazero's compilation cache goes to
# $XDG_CACHE_HOME, /tmp/cache: a read-only root file system works with a
# writable /tmp (see examples/kubernetes).
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolscript ./cmd/toolscript

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolscript /usr/local/bin/toolscript
ENV XDG_CACHE_HOME=/tmp/cache
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/toolscript"]
CMD ["serve", "--http", ":8080", "--stateless"]
