# glmbench's image: a static, cgo-free binary on distroless, for agents and
# coordinators (deploy/kubernetes/).
#
#   docker build -t ghcr.io/glmbench/glmbench:latest .

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: the default build is pure Go, so the binary needs no libc
# and runs on distroless/static.
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w" -o /out/glmbench ./cmd/glmbench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/glmbench /usr/local/bin/glmbench
# 65532 is distroless's nonroot; numeric so runAsNonRoot can check it.
USER 65532:65532
# glmbench agent --listen :9400
EXPOSE 9400
ENTRYPOINT ["/usr/local/bin/glmbench"]
