// Package gymjson is the one JSON scanner of the collector's decoders: the events-v1 line
// decoder (internal/events), the run-file row decoder (internal/rollouts) and the console
// decoder (internal/console) all read JSON by its rules.
//
// The grammar is RFC 8259 JSON plus the three tokens Python's json.dumps writes for
// non-finite floats (NaN, Infinity, -Infinity; see PythonToken): the only definition of
// which of them are accepted and of the values they stand for. The scanners work on a
// byte slice and an index into it, validate as they go (the UTF-8 of strings included) and
// never allocate unless they report an error.
package gymjson
