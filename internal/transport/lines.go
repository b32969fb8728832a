package transport

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/gym-telemetry/otelcol-gym/internal/ingest"
)

// ReasonPartialLine counts a last line that a stream ended before its newline.
const ReasonPartialLine = ingest.ReasonPartialLine

// lineReader splits a byte stream into lines for its decoder. It never glues two lines
// together: a line ends only at a newline, whatever the read boundaries; a line longer than
// max is rejected once and skipped up to its newline without being buffered; a partial last
// line at the end of the stream is rejected with a reason. Its buffer grows only up to max+1.
type lineReader struct {
	dec     LineDecoder
	max     int
	buf     []byte
	start   int   // first byte of the current partial line
	end     int   // end of the read data
	skip    bool  // inside a line already rejected as too long
	read    int64 // bytes read so far
	flushFn Recorder
	// chunkFn, when set, is called after the complete lines of each read are applied (and
	// their counts flushed): a point where what is applied and what was read agree.
	chunkFn func()
}

const initialLineBuf = 4 << 10

func newLineReader(dec LineDecoder, max int, flush Recorder) *lineReader {
	return &lineReader{dec: dec, max: max, buf: make([]byte, min(initialLineBuf, max+1)), flushFn: flush}
}

// readFrom reads r to its end (io.EOF, or an error such as a deadline) and applies every
// complete line. It returns the error that ended the reading (nil at io.EOF).
func (lr *lineReader) readFrom(r io.Reader) error {
	for {
		if lr.end == len(lr.buf) {
			lr.makeRoom()
		}
		n, err := r.Read(lr.buf[lr.end:])
		lr.end += n
		lr.read += int64(n)
		if n > 0 {
			lr.scan()
			lr.flush()
			if lr.chunkFn != nil {
				lr.chunkFn()
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// scan applies every complete line in the buffer.
func (lr *lineReader) scan() {
	for {
		i := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n')
		if i < 0 {
			break
		}
		line := lr.buf[lr.start : lr.start+i]
		lr.start += i + 1
		if lr.skip {
			lr.skip = false // the newline ends the over-long line
			continue
		}
		_, _ = lr.dec.Line(line)
	}
	if !lr.skip && lr.end-lr.start > lr.max {
		// The line is already longer than allowed: reject it now and drop its bytes as they come.
		lr.dec.Reject(ingest.ReasonTooLong)
		lr.skip = true
	}
	if lr.skip {
		lr.start = lr.end
	}
}

// makeRoom moves the partial line to the front, growing the buffer up to max+1 bytes.
func (lr *lineReader) makeRoom() {
	if lr.start > 0 {
		n := copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.start, lr.end = 0, n
		if lr.end < len(lr.buf) {
			return
		}
	}
	size := min(2*len(lr.buf), lr.max+1)
	if size <= len(lr.buf) {
		size = len(lr.buf) + 1 // unreachable while scan rejects lines over max
	}
	nb := make([]byte, size)
	copy(nb, lr.buf[:lr.end])
	lr.buf = nb
}

// finish ends the stream: a partial last line is rejected.
func (lr *lineReader) finish() {
	if lr.end > lr.start && !lr.skip {
		if len(bytes.Trim(lr.buf[lr.start:lr.end], " \t\r")) > 0 {
			lr.dec.Reject(ReasonPartialLine)
		}
	}
	lr.start, lr.end, lr.skip = 0, 0, false
	lr.flush()
}

func (lr *lineReader) flush() {
	stats := lr.dec.Flush()
	if lr.flushFn != nil {
		lr.flushFn(stats)
	}
	stats.Clear()
}

// isTimeout reports a read deadline that passed.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
