package main

// Numbers that do not fit. The files are written by any Gym process, so a reward may be any
// finite float64 and a token count any int64: a sum or a spread of them can overflow. No such
// number reaches the document: a float that is not finite is null ("-" in the text form), an
// integer sum saturates at the largest int64, and each is named in the document's "overflow"
// (a JSON Pointer to it) and on standard error with the file it came from.

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// maxSum is where an integer sum saturates: the largest int64.
const maxSum = math.MaxInt64

// addSat is a + b (both 0 or more, as the decoder gives counts) saturated at maxSum, and
// whether it saturated.
func addSat(a, b int64) (int64, bool) {
	if b > maxSum-a {
		return maxSum, true
	}
	return a + b, false
}

var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// pointer is the JSON Pointer (RFC 6901) of the document's value at the keys: names from the
// files may hold any character.
func pointer(keys ...string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteByte('/')
		b.WriteString(pointerEscape.Replace(k))
	}
	return b.String()
}

// overflows are a benchmark's numbers that do not fit, by cause: its rewards' statistics, its
// saturated sums, its cost.
type overflows struct {
	bench                 string
	rewards, sums, prices []string
}

// num is v when finite; else nil, named among the rewards' (or the cost's) overflows.
func (o *overflows) num(v float64, list *[]string, keys ...string) *float64 {
	if finite(v) {
		return &v
	}
	*list = append(*list, pointer(append([]string{"benchmarks", o.bench}, keys...)...))
	return nil
}

// pair is ci when both ends are finite; else nil, named.
func (o *overflows) pair(ci [2]float64, list *[]string, keys ...string) *[2]float64 {
	if finite(ci[0], ci[1]) {
		return &ci
	}
	*list = append(*list, pointer(append([]string{"benchmarks", o.bench}, keys...)...))
	return nil
}

func (o *overflows) all() []string {
	return slices.Concat(o.rewards, o.sums, o.prices)
}

// warnings say, for a person, what overflowed and from which file: the file of the largest
// reward, the file from which a sum saturated.
func (o *overflows) warnings(b *bench) []string {
	var out []string
	if len(o.rewards) > 0 {
		out = append(out, fmt.Sprintf("%s: benchmark %q: its rewards (up to %g, in this file) overflow a sum or a spread: null: %s",
			cmpFile(b.largestFile), o.bench, b.largest, strings.Join(o.rewards, ", ")))
	}
	if len(o.sums) > 0 {
		out = append(out, fmt.Sprintf("%s: benchmark %q: sums pass %d from this file on: saturated at it: %s",
			cmpFile(b.satFile), o.bench, int64(maxSum), strings.Join(o.sums, ", ")))
	}
	if len(o.prices) > 0 {
		out = append(out, fmt.Sprintf("benchmark %q: its cost is unknown (a token sum saturated) or overflows: null: %s",
			o.bench, strings.Join(o.prices, ", ")))
	}
	return out
}

// cmpFile names a file in a warning; rows applied without one (the tests') have none.
func cmpFile(path string) string {
	if path == "" {
		return "(no file)"
	}
	return path
}

// writeOverflow writes the text form's section of the numbers that do not fit.
func writeOverflow(w io.Writer, r Report) {
	if len(r.Overflow) == 0 {
		return
	}
	fmt.Fprintf(w, "\noverflow (shown as -, or a sum saturated at %d):\n", int64(maxSum))
	for _, p := range r.Overflow {
		fmt.Fprintf(w, "  %s\n", p)
	}
}
