# Dockerfile: the toolscript server image.
#
#   docker build -t toolscript:dev .
#   docker build --build-arg VERSION=v1.2.3 -t toolscript:v1.2.3 .
#   docker run --rm -p 8080:8080 toolscript:dev serve --http :8080 --stateless \
#       --auth-authority https://auth.example.com --auth-audience https://toolscript.example.com
#   docker run --rm -i toolscript:dev run - < examples/hello.luau
#
# It builds with BuildKit (the default builder of current Docker) and with
# the classic builder alike: no `# syntax=` line (BuildKit's built-in
# frontend reads it, so no frontend image is pulled and offline or
# mirror-only builds work) and no RUN --mount (the module download is a
# layer of its own, cached while go.mod and go.sum stay the same).
#
# A static Go binary (CGO off: the Luau module is wasm/luau.wasm, embedded,
# so no C toolchain is needed) on distroless, run as the unprivileged
# "nonroot" user (65532). The working directory is that user's home,
# /home/nonroot, which it owns: `run`'s default io directory,
# ./toolscript-files, and a ./toolscript.toml resolve there. wazero's
# compilation cache goes to $XDG_CACHE_HOME, /tmp/cache: a read-only root
# file system works with a writable /tmp (see examples/kubernetes).
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolscript ./cmd/toolscript

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolscript /usr/local/bin/toolscript
ENV XDG_CACHE_HOME=/tmp/cache
USER nonroot:nonroot
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/toolscript"]
CMD ["serve", "--http", ":8080", "--stateless"]
