// Package schema is the Go view of the top-level metadata.yaml: every Gym instrument, its
// attributes with their rules, the bucket boundaries and the registries. schema_gen.go is
// generated from metadata.yaml by cmd/schemagen (make generate); nothing here is typed by hand
// a second time.
package schema

import "slices"

// Kind is an instrument kind in OpenTelemetry data-model words.
type Kind uint8

const (
	KindCounter   Kind = iota + 1 // Sum, monotonic, cumulative
	KindUpDown                    // Sum, non-monotonic, cumulative
	KindGauge                     // Gauge
	KindHistogram                 // explicit-bucket Histogram, cumulative
)

func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindUpDown:
		return "updown"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return "unknown"
}

// ValueType is the type of a Sum or Gauge data point.
type ValueType uint8

const (
	ValueInt ValueType = iota + 1
	ValueDouble
)

// AttrType is the type of an attribute value.
type AttrType uint8

const (
	AttrString AttrType = iota + 1
	AttrInt
	AttrBool
)

// Rule names how an attribute's value is bounded (docs/metrics.md, "Attributes").
type Rule uint8

const (
	RuleString       Rule = iota + 1 // free string, capped at MaxBytes at a rune boundary
	RuleEnum                         // one of Values, else the line is rejected
	RuleFallbackEnum                 // one of Values, else Fallback
	RuleFailureKind                  // registry, or namespaced Pattern within MaxBytes, else Fallback
	RuleIdentifier                   // Pattern within MaxBytes, else Fallback
	RuleHealthCheck                  // registry, else Fallback
	RuleRoute                        // a template (starts with "/", no "?", within MaxBytes) else Fallback
	RuleStatusCode                   // an int within [Min, Max], else rejected
	RuleIntEnum                      // one of IntValues, else rejected
	RuleBool                         // a boolean
	RuleRewardRange                  // derived from a reward number (Values lists the ranges)
	RulePhase                        // derived from response_started (Values[0] before, Values[1] during)
	RuleIntRange                     // an int within [Min, Max], else rejected
)

// AttrID indexes Attributes.
type AttrID uint16

// Attribute is one attribute key of the schema with its value rule.
type Attribute struct {
	Key         string
	Type        AttrType
	Rule        Rule
	Description string
	Values      []string // enumerated values (RuleEnum, RuleFallbackEnum, RuleRewardRange, RulePhase)
	IntValues   []int64  // RuleIntEnum
	Fallback    string   // the value that replaces one that breaks the rule
	Pattern     string   // the documented pattern (RuleFailureKind, RuleIdentifier)
	MaxBytes    int      // cap for string values (0: none)
	Min, Max    int64    // RuleStatusCode, RuleIntRange
	Aliases     []Alias  // values an older sender writes, read as one of Values (sorted by From)
	OTLPValues  []string // values only Gym's own code writes, by OTLP: kept, but no events-v1 value
}

// Alias is a value an older sender writes for an enumerated attribute (From), and the value of
// the attribute's own it is read as (To). internal/normalize applies it.
type Alias struct {
	From, To string
}

// InstrumentID indexes Instruments.
type InstrumentID uint16

// InstrumentAttr is one attribute of an instrument, in export order.
type InstrumentAttr struct {
	ID AttrID
	// Values, when set, narrows the attribute's Values for this instrument
	// (e.g. health counters take only scored/failed outcomes).
	Values []string
	// Optional: the attribute is left out of a data point when the event does not give it.
	Optional bool
	// When documents the condition under which the attribute is present.
	When string
}

// Instrument is one Gym instrument.
type Instrument struct {
	Name        string
	Description string
	Group       string
	Kind        Kind
	ValueType   ValueType
	Unit        string
	Units       []string  // the other units an OTLP sender may state, exported as Unit
	Buckets     string    // name of the bucket boundary set (histograms)
	Bounds      []float64 // explicit bucket boundaries (histograms)
	Attrs       []InstrumentAttr
	Events      []string // the events-v1 events that feed it
	Source      string   // "events", "process" (read by the collector), "run_files", "otlp" (OTLP only), "derived" (gymattrs' genai_conventions), "spans" (the gymrollouts connector) or "prices" (the gym receiver's price table)
	Row         string   // the run-file field that feeds it (source run_files, or also an events one)
	AcceptKinds []Kind   // the kinds an OTLP sender may use, kept as sent (nil: Kind only)
	Snapshot    bool     // fed by a snapshot total the process keeps itself
	Note        string
}

// Accepts reports whether a metric of kind k from OTLP is this instrument's: its own kind, or
// one of AcceptKinds.
func (in *Instrument) Accepts(k Kind) bool {
	return k == in.Kind || slices.Contains(in.AcceptKinds, k)
}

// AcceptsUnit reports whether a metric stating unit u from OTLP is this instrument's: its own
// Unit, or one of Units (what Gym's own code states). Its points are exported with Unit.
func (in *Instrument) AcceptsUnit(u string) bool {
	return u == in.Unit || slices.Contains(in.Units, u)
}

// Monotonic reports whether the instrument is a monotonic Sum.
func (in *Instrument) Monotonic() bool { return in.Kind == KindCounter }

// Attribute returns the attribute definition with the given ID.
func Attr(id AttrID) *Attribute { return &Attributes[id] }

// Get returns the instrument with the given ID.
func Get(id InstrumentID) *Instrument { return &Instruments[id] }

// Lookup returns the instrument with the given name.
func Lookup(name string) (InstrumentID, bool) {
	id, ok := byName[name]
	return id, ok
}

// LookupAttr returns the attribute with the given key.
func LookupAttr(key string) (AttrID, bool) {
	id, ok := attrByKey[key]
	return id, ok
}

var (
	byName    = map[string]InstrumentID{}
	attrByKey = map[string]AttrID{}
)

func init() {
	for i := range Instruments {
		byName[Instruments[i].Name] = InstrumentID(i)
	}
	for i := range Attributes {
		attrByKey[Attributes[i].Key] = AttrID(i)
	}
}

// Allows reports whether v is one of the values the instrument admits for its i-th attribute
// (the narrowed list when the instrument narrows it, else the attribute's own).
func (in *Instrument) Allows(i int, v []byte) bool {
	vals := in.Attrs[i].Values
	if vals == nil {
		vals = Attributes[in.Attrs[i].ID].Values
	}
	for _, s := range vals {
		if string(v) == s {
			return true
		}
	}
	return false
}

// AttrValues returns the values the instrument admits for attribute id: the instrument's
// narrowed list when it has one, else the attribute's own (nil when id is not an attribute
// of the instrument).
func (in *Instrument) AttrValues(id AttrID) []string {
	for i := range in.Attrs {
		if in.Attrs[i].ID == id {
			if in.Attrs[i].Values != nil {
				return in.Attrs[i].Values
			}
			return Attributes[id].Values
		}
	}
	return nil
}
