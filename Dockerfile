# Meridian's container image, for builders with a Docker daemon:
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ghcr.io/meridian-gslb/meridian:dev .
# `make image` builds the same image without a daemon (tools/mkimage): the
# static binary and the CA bundle on an empty base, non-root, no shell.
# tools/mkimage's test checks that this file and the builder agree on the
# user, ports, entrypoint and command.

FROM golang:1.26 AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/meridian-gslb/meridian/internal/app.Version=${VERSION}" \
      -o /rootfs/meridian ./cmd/meridian
# The rest of the root file system: the CA bundle, a passwd/group naming the
# nonroot user, /tmp, and the state directory (server.state_dir) owned by it.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/var/lib/meridian && \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/meridian:/sbin/nologin\n' > /rootfs/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group && \
    chmod 1777 /rootfs/tmp && \
    chmod 700 /rootfs/var/lib/meridian && chown 65532:65532 /rootfs/var/lib/meridian

FROM scratch
ARG VERSION=dev
COPY --from=build /rootfs/ /
LABEL org.opencontainers.image.title="meridian" \
      org.opencontainers.image.description="Meridian: GSLB and authoritative DNS" \
      org.opencontainers.image.source="https://github.com/meridian-gslb/meridian" \
      org.opencontainers.image.url="https://github.com/meridian-gslb/meridian" \
      org.opencontainers.image.version="${VERSION}"
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# DNS on 5353 (a non-root process cannot bind 53; Service meridian-dns maps
# 53 to it), HTTP on 8080, the prober ring on 7946 (deploy/kustomize/base).
EXPOSE 5353/udp 5353/tcp 8080/tcp 7946/udp 7946/tcp
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/meridian"]
CMD ["serve", "--config", "/etc/meridian/config.yaml"]
