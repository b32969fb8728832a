package gymreceiver

// Mozilla's root certificates, compiled into every otelcol-gym binary: Go verifies with them
// only where the host has no CA bundle of its own (the image, built FROM scratch), so that the
// exporters and `--config https://...` can verify public backends there; a host's bundle, or
// SSL_CERT_FILE / SSL_CERT_DIR, still takes precedence. ocb generates main.go from
// builder-config.yaml and has no field for an extra import: the gym receiver is in every build
// of the distribution, so the import lives here (docs/deployment.md, Container image).
import _ "golang.org/x/crypto/x509roots/fallback"
