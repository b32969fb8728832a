package rollouts

import "bytes"

// A verdict row's verdict and findings.

// verdict reads the required verdict: healthy, unhealthy or unobserved.
func (r *RowDecoder) verdict(row *Row) bool {
	var v []byte
	if !r.str("verdict", slotVerdict, &v) {
		return false
	}
	if v == nil {
		row.Verdict = nil // null is absent
		return true
	}
	for _, want := range verdicts {
		if bytes.Equal(v, want) {
			row.Verdict = want
			return true
		}
	}
	r.failf(ReasonInvalidValue, "key \"verdict\": %q is not one of %s", v, verdictNames)
	return false
}

// findings reads the findings array: each element a check id, or an object whose check (else
// check_id) is the check id; null elements and objects without either are left out. An
// earlier findings key of the row is forgotten (the last wins); a check id the row has
// already, or one past MaxFindings, is cut off scratch at once.
func (r *RowDecoder) findings(row *Row) bool {
	row.Findings = row.Findings[:0]
	r.scratch = r.scratch[:0] // it held only the findings forgotten
	switch c := r.buf[r.pos]; c {
	case '[':
		r.pos++
	case 'n':
		return r.null("findings", "an array")
	default:
		return r.wrongType("findings", "an array", c)
	}
	return r.elements("findings", func(c byte) bool {
		switch c {
		case '"':
			r.pos++
			start := len(r.scratch)
			v, ok := r.readString("findings[]", MaxValueBytes)
			if !ok {
				return false
			}
			if row.keeps(v) {
				row.Findings = append(row.Findings, v)
			} else {
				r.scratch = r.scratch[:start]
			}
		case '{':
			r.pos++
			r.check, r.checkID = nil, nil
			if !r.object(ctxFinding, row) {
				return false
			}
			v := r.check
			if v == nil {
				v = r.checkID
			}
			if v != nil && row.keeps(v) {
				start := len(r.scratch)
				r.scratch = append(r.scratch, v...)
				row.Findings = append(row.Findings, r.scratch[start:])
			}
		case 'n':
			return r.null("findings[]", "a string or an object")
		default:
			return r.wrongType("findings[]", "a string or an object", c)
		}
		return true
	})
}
