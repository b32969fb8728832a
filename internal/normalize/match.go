package normalize

import "github.com/gym-telemetry/otelcol-gym/internal/schema"

// Hand-written matchers of the patterns metadata.yaml documents, each matching the whole
// value (as regexp "^(?:" + Pattern + ")$" would). Length caps are applied by the callers, from
// the schema. TestMatchersAgreeWithSchemaPatterns and FuzzPatterns hold every matcher to the
// Pattern of its attribute, so the two cannot drift apart.
var handMatchers = map[schema.AttrID]func([]byte) bool{
	schema.AttrNemoGymFailureClass: isLowerIdent,  // [a-z][a-z0-9_]*
	schema.AttrNemoGymFailureKind:  isNamespaced,  // [a-z][a-z0-9_]*:[a-z][a-z0-9_]*
	schema.AttrNemoGymFailureType:  isDottedIdent, // [A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*

	schema.AttrNemoGymConcurrencyComponent:       isLowerIdent,  // [a-z][a-z0-9_]*
	schema.AttrNemoGymConcurrencyLimitName:       isLimitName,   // [a-z][a-z0-9_.-]*
	schema.AttrNemoGymModelCallOutcome:           isLowerIdent,  // [a-z][a-z0-9_]*
	schema.AttrNemoGymTokenCaptureOperation:      isLooseDotted, // [A-Za-z_][A-Za-z0-9_.]*
	schema.AttrNemoGymTokenCaptureImplementation: isLooseDotted,
	schema.AttrNemoGymTokenCaptureOutcome:        isLooseDotted,
	schema.AttrNemoGymTokenCaptureReason:         isLooseDotted,
	schema.AttrNemoGymTokenCaptureDigest:         isLooseDotted,
	schema.AttrNemoGymTokenCaptureCache:          isLooseDotted,

	schema.AttrGenAiOperationName:     isLowerIdent, // [a-z][a-z0-9_]*
	schema.AttrGenAiProviderName:      isLimitName,  // [a-z][a-z0-9_.-]*
	schema.AttrNemoGymConcurrencySite: isSiteName,   // [A-Za-z_][A-Za-z0-9_.-]*
	schema.AttrNemoGymModelDialect:    isLowerIdent, // [a-z][a-z0-9_]*
	schema.AttrNemoGymToolName:        isToolName,   // [A-Za-z0-9_][A-Za-z0-9_.-]*
	schema.AttrNemoGymGpuUuid:         isGPUUUID,    // (GPU|MIG)-<8>-<4>-<4>-<4>-<12 hex>
	schema.AttrErrorType:              isWordDotted, // [A-Za-z0-9_][A-Za-z0-9_.]*
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || (c >= 'A' && c <= 'Z') }

// isLowerIdent matches [a-z][a-z0-9_]*.
func isLowerIdent(v []byte) bool {
	if len(v) == 0 || !isLower(v[0]) {
		return false
	}
	for _, c := range v[1:] {
		if !isLower(c) && !isDigit(c) && c != '_' {
			return false
		}
	}
	return true
}

// isNamespaced matches [a-z][a-z0-9_]*:[a-z][a-z0-9_]* (exactly one colon).
func isNamespaced(v []byte) bool {
	for i, c := range v {
		if c == ':' {
			return isLowerIdent(v[:i]) && isLowerIdent(v[i+1:])
		}
	}
	return false
}

// isDottedIdent matches [A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*: dot-separated
// segments, none empty, each starting with a letter or underscore.
func isDottedIdent(v []byte) bool {
	start := true // the next byte starts a segment
	for _, c := range v {
		switch {
		case isAlpha(c) || c == '_':
			start = false
		case isDigit(c):
			if start {
				return false
			}
		case c == '.':
			if start {
				return false
			}
			start = true
		default:
			return false
		}
	}
	return !start // non-empty, no trailing dot
}

// isLimitName matches [a-z][a-z0-9_.-]*.
func isLimitName(v []byte) bool {
	if len(v) == 0 || !isLower(v[0]) {
		return false
	}
	for _, c := range v[1:] {
		if !isLower(c) && !isDigit(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// isLooseDotted matches [A-Za-z_][A-Za-z0-9_.]*: unlike isDottedIdent, dots may repeat, trail,
// or come before a digit.
func isLooseDotted(v []byte) bool {
	if len(v) == 0 || !isAlpha(v[0]) && v[0] != '_' {
		return false
	}
	for _, c := range v[1:] {
		if !isAlpha(c) && !isDigit(c) && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool { return isAlpha(c) || isDigit(c) || c == '_' }

// allOf reports whether every byte of v is a word byte or one of extra.
func allOf(v []byte, extra string) bool {
	for _, c := range v {
		if !isWordByte(c) && !bytesHas(extra, c) {
			return false
		}
	}
	return true
}

func bytesHas(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// isSiteName matches [A-Za-z_][A-Za-z0-9_.-]*.
func isSiteName(v []byte) bool {
	return len(v) > 0 && (isAlpha(v[0]) || v[0] == '_') && allOf(v[1:], ".-")
}

// isToolName matches [A-Za-z0-9_][A-Za-z0-9_.-]*.
func isToolName(v []byte) bool {
	return len(v) > 0 && isWordByte(v[0]) && allOf(v[1:], ".-")
}

// isWordDotted matches [A-Za-z0-9_][A-Za-z0-9_.]*.
func isWordDotted(v []byte) bool {
	return len(v) > 0 && isWordByte(v[0]) && allOf(v[1:], ".")
}

// gpuUUIDGroups are the lengths of the hex groups of a GPU UUID, as nvidia-smi writes it.
var gpuUUIDGroups = [...]int{8, 4, 4, 4, 12}

// isGPUUUID matches (GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}.
func isGPUUUID(v []byte) bool {
	if len(v) < 4 || v[3] != '-' || string(v[:3]) != "GPU" && string(v[:3]) != "MIG" {
		return false
	}
	v = v[4:]
	for g, n := range gpuUUIDGroups {
		if g > 0 {
			if len(v) == 0 || v[0] != '-' {
				return false
			}
			v = v[1:]
		}
		if len(v) < n {
			return false
		}
		for _, c := range v[:n] {
			if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
				return false
			}
		}
		v = v[n:]
	}
	return len(v) == 0
}
