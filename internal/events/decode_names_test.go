package events

import "github.com/gym-telemetry/otelcol-gym/internal/gymjson"

// The names the decoder's tests were written with, from before its scanner moved to
// internal/gymjson.
type decIntStatus = gymjson.IntStatus

const (
	decIntOK          = gymjson.IntOK
	decIntNotIntegral = gymjson.IntNotIntegral
	decIntOutOfRange  = gymjson.IntOutOfRange
)

func decParseInt(t []byte) (int64, decIntStatus) { return gymjson.ParseInt(t) }
func decParseFloat(t []byte) float64             { return gymjson.ParseFloat(t) }
