# otelcol-gym container image: FROM scratch (no shell, no package manager, no libc), the static
# binary, its default configuration, running as an unprivileged user.
#
#   make image                 # buildah (or podman) build; context: _build/image/ (tools/image-context.sh)
#
# No CA bundle file: the binary embeds Mozilla's root certificates (golang.org/x/crypto/
# x509roots/fallback) and Go uses them where the host has none, so exporters and
# --config https://... verify public backends; SSL_CERT_FILE, or a component's tls.ca_file,
# names other roots (docs/deployment.md, Container image).
#
# The default configuration is /etc/otelcol-gym/config.yaml (config/otelcol-gym.yaml: every
# listener on the container's loopback): mount another file there, or pass other arguments
# (--config /etc/otelcol-gym/agent.yaml). Its storage directory, /var/lib/otelcol-gym, belongs
# to the image's user.
FROM scratch
# make image and the release set these: VERSION (builder-config.yaml), the commit, and the
# commit's time (SOURCE_DATE_EPOCH, which is also the image's creation time: reproducible).
ARG VERSION=0.0.0
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="otelcol-gym" \
      org.opencontainers.image.description="OpenTelemetry Collector distribution for NeMo Gym's telemetry" \
      org.opencontainers.image.source="https://github.com/gym-telemetry/otelcol-gym" \
      org.opencontainers.image.documentation="https://github.com/gym-telemetry/otelcol-gym/blob/main/docs/deployment.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY otelcol-gym /otelcol-gym
COPY etc/ /etc/
COPY usr/ /usr/
# /var/lib (root's), then the storage directory in it, the image user's.
COPY var/ /var/
COPY --chown=10001:10001 storage/ /var/lib/otelcol-gym/
USER 10001:10001
# gym receiver (HTTP), OTLP gRPC and HTTP, health check, the collector's own metrics
EXPOSE 4390 4317 4318 13133 8888
ENTRYPOINT ["/otelcol-gym"]
CMD ["--config", "/etc/otelcol-gym/config.yaml"]
