package gymattrs

import "github.com/gym-telemetry/otelcol-gym/internal/bound"

// Config is the gymattrs processor's configuration: the gymattrs rules' own (internal/bound;
// every key in docs/processor.md). Its Validate names the key of a bad value.
type Config = bound.Config
