// Package oldjson is the encoding/json decoder of console records that the gymjson one
// replaced, kept for a while as the oracle of the differential fuzz test (FuzzDecodeOracle).
package oldjson

import (
	"encoding/json"
	"errors"
	"io"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Group is a resourceGroup.
type Group = resourceGroup

// Decode decodes one record as the old stream did: "metrics", "span" or "log"; the reason
// of a rejection ("" when accepted).
func Decode(kind string, b []byte, md pmetric.Metrics, td ptrace.Traces, ld plog.Logs, g *Group) (string, error) {
	if nb, changed := pyTokens(b, nil); changed {
		b = nb
	}
	var err error
	switch kind {
	case "metrics":
		err = DecodeMetrics(b, md)
	case "span":
		err = DecodeSpan(b, td, g)
	case "log":
		err = DecodeLog(b, ld, g)
	}
	if err == nil {
		return "", nil
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errTrailing) {
		return "invalid_json", err
	}
	return "invalid_record", err
}
