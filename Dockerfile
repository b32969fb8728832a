# otelcol-gym container image: the static binary alone, FROM scratch (no shell, no package
# manager, no libc), running as an unprivileged user.
#
#   make image                 # buildah (or podman) build; context: _build/image/
#
# The build context holds only the binary (ocb builds it with CGO_ENABLED=0: static). The
# configuration is a mounted file (Kubernetes: a ConfigMap): /etc/otelcol-gym/config.yaml
# unless the arguments name another (--config /etc/otelcol-gym/agent.yaml).
FROM scratch
COPY otelcol-gym /otelcol-gym
USER 10001:10001
# gym receiver (HTTP), OTLP gRPC and HTTP, health check, the collector's own metrics
EXPOSE 4390 4317 4318 13133 8888
ENTRYPOINT ["/otelcol-gym"]
CMD ["--config", "/etc/otelcol-gym/config.yaml"]
