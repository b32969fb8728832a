package rollouts

import (
	"bytes"
	"errors"
	"io"

	"github.com/gym-telemetry/otelcol-gym/internal/gymjson"
)

// The read buffer: a row's bytes are read as they arrive, one buffer at a time.

// more makes buf[pos] readable: false at the end of the stream, or when the line grew over
// max (the failure is recorded). Small enough to be inlined into the per-byte loops; fill does
// the rest.
func (r *RowDecoder) more() bool {
	return r.pos < r.end || r.fill()
}

// fill reads the next buffer once buf[pos:end] is used up.
func (r *RowDecoder) fill() bool {
	if r.srcEnd {
		return false
	}
	if r.max > 0 && !r.skipping && r.base+int64(r.end)-r.lineStart > r.max {
		// Every byte read since lineStart belongs to this line: it is too long already.
		r.failf(ReasonTooLong, "the row is over max_line_bytes %d", r.max)
		return false
	}
	if r.keyInBuf {
		r.keyBuf = append(r.keyBuf[:0], r.key...)
		r.key, r.keyInBuf = r.keyBuf, false
	}
	r.base += int64(r.end)
	r.pos, r.end = 0, 0
	for r.end == 0 {
		n, err := r.src.Read(r.buf)
		r.end = n
		if err != nil {
			r.srcEnd = true
			if !errors.Is(err, io.EOF) {
				r.srcErr = err
			}
			break
		}
	}
	return r.end > 0
}

// at is the byte at pos, or 0 when the buffer is used up. Gym writes compact JSON: the byte
// after a token is nearly always the next token, so the per-member loops test at() > ' '
// (inlined) and call ws only otherwise.
func (r *RowDecoder) at() byte {
	if r.pos < r.end {
		return r.buf[r.pos]
	}
	return 0
}

// ws skips white space other than the newline and returns the next byte (not consumed).
func (r *RowDecoder) ws() (byte, bool) {
	for r.more() {
		c := r.buf[r.pos]
		if c == '\n' || !gymjson.IsSpace(c) {
			return c, true
		}
		r.pos++
	}
	return 0, false
}

// skipToNewline moves to the line's newline, ignoring what lies before it.
func (r *RowDecoder) skipToNewline() bool {
	r.skipping = true
	for r.more() {
		if i := bytes.IndexByte(r.buf[r.pos:r.end], '\n'); i >= 0 {
			r.pos += i
			return true
		}
		r.pos = r.end
	}
	return false
}
