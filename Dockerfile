# vembed in a container: a static binary on a distroless base, run as a
# non-root user, with no shell or package manager at run time.
#   docker build -t vembed .
#   docker run -p 8080:8080 -v $PWD/models:/models vembed serve --addr 0.0.0.0:8080 \
#     --model /models/lm.gguf --mmproj /models/mmproj.gguf
# One multi-platform image for clusters of x86 and Arm (Graviton, Ampere,
# Axion) nodes:
#   docker buildx build --platform linux/amd64,linux/arm64 -t registry/vembed --push .
# The build stage runs on the builder's own platform and cross-compiles
# for each target (pure Go, no cgo), so no stage runs under emulation;
# the binary picks its kernel tier from the CPU it starts on.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/vembed ./cmd/vembed

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/vembed /vembed
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/vembed"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
