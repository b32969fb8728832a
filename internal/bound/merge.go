package bound

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The merge of the points of one series in a batch (docs/processor.md, "Merging"): what pass 1
// adds up and what pass 2 writes into the carrier.

// addNumber adds a delta Sum point: values add, the start is the earliest, the time the latest.
func (e *entry) addNumber(dp pmetric.NumberDataPoint) {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
		e.isDouble = true
		e.f += dp.DoubleValue()
	} else {
		e.i += dp.IntValue()
	}
	e.span(dp.StartTimestamp(), dp.Timestamp())
}

func (e *entry) span(start, ts pcommon.Timestamp) {
	if !e.seen {
		e.start, e.ts, e.seen = start, ts, true
		return
	}
	if start != 0 && (e.start == 0 || start < e.start) {
		e.start = start
	}
	if ts > e.ts {
		e.ts = ts
	}
}

// addHistogram adds a delta Histogram point with the carrier's bounds, bucket-wise.
func (e *entry) addHistogram(dp pmetric.HistogramDataPoint) {
	bc := dp.BucketCounts()
	if !e.seen {
		if cap(e.buckets) < bc.Len() {
			e.buckets = make([]uint64, bc.Len())
		}
		e.buckets = e.buckets[:bc.Len()]
		clear(e.buckets)
	}
	e.span(dp.StartTimestamp(), dp.Timestamp())
	for k := range e.buckets {
		e.buckets[k] += bc.At(k)
	}
	e.count += dp.Count()
	e.sum += dp.Sum()
	if dp.Count() > 0 {
		if !dp.HasSum() {
			e.noSum = true
		}
		if dp.HasMin() && dp.HasMax() {
			if !e.hasMM {
				e.min, e.max, e.hasMM = dp.Min(), dp.Max(), true
			} else {
				e.min = math.Min(e.min, dp.Min())
				e.max = math.Max(e.max, dp.Max())
			}
		} else {
			e.noMM = true
		}
	}
}

// finish writes a series' merged value into its carrier (pass 2).
func (p *Bounder) finish(e *entry) {
	switch {
	case e.gauge:
		if !e.newestCarrier {
			copyGauge(e.newest, e.num)
			p.b.c.removed += int64(clearExemplarAttrs(e.num.Exemplars()))
		}
	case e.cum && e.hist:
		writeHistogram(&e.s.cum.total, e.hdp)
	case e.cum:
		writeNumber(&e.s.cum.total, e.num)
	case e.n == 1:
		// A delta point alone in its series: kept as it came.
	case e.hist:
		writeHistogram(&e.total, e.hdp)
	default:
		writeNumber(&e.total, e.num)
	}
}

func setMinMax(dp pmetric.HistogramDataPoint, count uint64, ok bool, lo, hi float64) {
	if ok && count > 0 {
		dp.SetMin(lo)
		dp.SetMax(hi)
		return
	}
	dp.RemoveMin()
	dp.RemoveMax()
}

func copyGauge(from, to pmetric.NumberDataPoint) {
	switch from.ValueType() {
	case pmetric.NumberDataPointValueTypeDouble:
		to.SetDoubleValue(from.DoubleValue())
	default:
		to.SetIntValue(from.IntValue())
	}
	to.SetStartTimestamp(from.StartTimestamp())
	to.SetTimestamp(from.Timestamp())
	to.SetFlags(from.Flags())
	from.Exemplars().CopyTo(to.Exemplars())
}

// writeNumber writes a merged sum into its carrier point.
func writeNumber(c *total, dp pmetric.NumberDataPoint) {
	dp.SetStartTimestamp(c.start)
	dp.SetTimestamp(c.ts)
	if c.isDouble {
		dp.SetDoubleValue(float64(c.i) + c.f)
	} else {
		dp.SetIntValue(c.i)
	}
}

// writeHistogram writes a merged histogram into its carrier point.
func writeHistogram(c *total, dp pmetric.HistogramDataPoint) {
	dp.SetStartTimestamp(c.start)
	dp.SetTimestamp(c.ts)
	dp.SetCount(c.count)
	if c.noSum {
		dp.RemoveSum()
	} else {
		dp.SetSum(c.sum)
	}
	setMinMax(dp, c.count, c.hasMM && !c.noMM, c.min, c.max)
	dp.BucketCounts().FromRaw(c.buckets)
}
