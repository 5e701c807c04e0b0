# syntax=docker/dockerfile:1
# etl: a static binary on distroless, running as a non-root user.
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t etl .
#   docker run --rm -v $PWD/pipeline.yaml:/etc/etl/pipeline.yaml:ro -p 9090:9090 etl
# Kubernetes manifests: deploy/kubernetes.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/etl ./cmd/etl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/etl /usr/local/bin/etl
USER nonroot:nonroot
# metrics.listen: /metrics, /healthz, /readyz. The default listen address is
# 127.0.0.1:9090; set metrics.listen: "0.0.0.0:9090" in a container.
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/etl"]
CMD ["-config", "/etc/etl/pipeline.yaml"]
