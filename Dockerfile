# vembed in a container: a static binary on a distroless base, run as a
# non-root user, with no shell or package manager at run time.
#   docker build -t vembed .
#   docker run -p 8080:8080 -v $PWD/models:/models vembed serve --addr 0.0.0.0:8080 \
#     --model /models/lm.gguf --mmproj /models/mmproj.gguf
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/vembed ./cmd/vembed

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/vembed /vembed
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/vembed"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
