package main

import (
	"math"
	"slices"
)

// histBins is the number of bins of a benchmark's reward histogram.
const histBins = 20

// histogram counts rewards into histBins equal bins over [lo, lo + histBins·width], in fixed
// memory whatever the number of rows: the first two distinct values set the range to exactly
// theirs; a value outside it doubles the width (pairs of bins merged) until it fits, so the
// range covers every value. Until a second distinct value comes, width is 0 and every value
// (all equal to lo) is in the first bin. Rewards of 0 and 1 only are two bars: the first bin
// and the last.
type histogram struct {
	lo, width float64
	counts    [histBins]int64
	n         int64
}

func (h *histogram) add(v float64) {
	switch {
	case h.n == 0:
		h.lo = v
	case h.width == 0 && v != h.lo:
		old, n := h.lo, h.counts[0]
		h.counts[0] = 0
		h.lo, h.width = min(old, v), math.Abs(v-old)/histBins
		h.counts[h.bin(old)] = n
	}
	for h.width > 0 && (v < h.lo || v > h.lo+histBins*h.width) {
		h.double(v < h.lo)
	}
	h.counts[h.bin(v)]++
	h.n++
}

// double doubles the width: downward (the range grows below lo) or upward.
func (h *histogram) double(down bool) {
	var c [histBins]int64
	off := 0
	if down {
		off = histBins / 2
		h.lo -= histBins * h.width
	}
	for i, n := range h.counts {
		c[off+i/2] += n
	}
	h.counts, h.width = c, 2*h.width
}

// bin is v's bin: the last one holds the upper bound.
func (h *histogram) bin(v float64) int {
	if h.width == 0 {
		return 0
	}
	f := math.Floor((v - h.lo) / h.width)
	if !(f >= 0) { // NaN at the limits of float64 too
		return 0
	}
	return int(min(f, histBins-1))
}

// Histogram is a reward histogram in JSON: len(counts) equal bins over [lo, hi] (the last bin
// holds hi; lo = hi: one bin, every value is lo).
type Histogram struct {
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Counts []int64 `json:"counts"`
}

// report gives the bins from the first that counts a value to the last: at most histBins,
// covering the values with less than a bin to spare at either end.
func (h *histogram) report() *Histogram {
	if h.n == 0 {
		return nil
	}
	if h.width == 0 {
		return &Histogram{Lo: h.lo, Hi: h.lo, Counts: []int64{h.n}}
	}
	first, last := 0, histBins-1
	for h.counts[first] == 0 {
		first++
	}
	for h.counts[last] == 0 {
		last--
	}
	return &Histogram{Lo: h.lo + float64(first)*h.width, Hi: h.lo + float64(last+1)*h.width, Counts: slices.Clone(h.counts[first : last+1])}
}
