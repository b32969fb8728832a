// Package schemagen reads the top-level metadata.yaml, validates it, and renders the Go view
// of it (internal/schema/schema_gen.go), the metric reference (docs/metrics.md) and the Python
// emitter's view (python/otelcol_gym/_schema.py).
package schemagen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

type limits struct {
	StringMaxBytes          int `yaml:"string_max_bytes"`
	ResourceMaxAttributes   int `yaml:"resource_max_attributes"`
	ResourceMaxKeyBytes     int `yaml:"resource_max_key_bytes"`
	DefaultCardinalityLimit int `yaml:"default_cardinality_limit"`
	DefaultMaxLineBytes     int `yaml:"default_max_line_bytes"`
}

type file struct {
	SchemaVersion     int    `yaml:"schema_version"`
	Limits            limits `yaml:"limits"`
	OverflowAttribute string `yaml:"overflow_attribute"`
	DefaultResource   struct {
		SourceKey   string `yaml:"source_key"`
		FilePathKey string `yaml:"file_path_key"`
	} `yaml:"default_resource"`
	BucketBoundaries yaml.Node `yaml:"bucket_boundaries"`
	Registries       struct {
		FailureKinds []string `yaml:"failure_kinds"`
		HealthChecks []string `yaml:"health_checks"`
		// TruncatedFinishReasons: values of nemo.gym.rollout.finish_reason.
		TruncatedFinishReasons []string `yaml:"truncated_finish_reasons"`
	} `yaml:"registries"`
	Attributes  yaml.Node `yaml:"attributes"`
	Instruments yaml.Node `yaml:"instruments"`
}

// Attribute is one attribute of metadata.yaml.
type Attribute struct {
	Key         string   `yaml:"-"`
	Type        string   `yaml:"type"`
	Rule        string   `yaml:"rule"`
	Values      []string `yaml:"values"`
	IntValues   []int64  `yaml:"int_values"`
	Fallback    string   `yaml:"fallback"`
	Pattern     string   `yaml:"pattern"`
	MaxBytes    int      `yaml:"max_bytes"`
	Min         int64    `yaml:"min"`
	Max         int64    `yaml:"max"`
	Description string   `yaml:"description"`
	// Aliases: value an older sender writes -> the value it is read as (enum, fallback_enum).
	Aliases map[string]string `yaml:"aliases"`
	// OTLPValues: values only Gym's own code writes, by OTLP (enum, fallback_enum): kept by
	// gymattrs, never part of events-v1 (whose lines name only Values).
	OTLPValues []string `yaml:"otlp_values"`
}

// AliasPairs returns the attribute's aliases sorted by the value an older sender writes.
func (a *Attribute) AliasPairs() [][2]string {
	out := make([][2]string, 0, len(a.Aliases))
	for from, to := range a.Aliases {
		out = append(out, [2]string{from, to})
	}
	slices.SortFunc(out, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
	return out
}

// InstrumentAttr is an attribute reference of an instrument.
type InstrumentAttr struct {
	Key      string   `yaml:"key"`
	Values   []string `yaml:"values"`
	Optional bool     `yaml:"optional"`
	When     string   `yaml:"when"`
}

// UnmarshalYAML takes either a plain key or a mapping.
func (a *InstrumentAttr) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		a.Key = n.Value
		return nil
	}
	type plain InstrumentAttr
	return n.Decode((*plain)(a))
}

// Instrument is one instrument of metadata.yaml.
type Instrument struct {
	Name        string           `yaml:"-"`
	Group       string           `yaml:"group"`
	Description string           `yaml:"description"`
	Kind        string           `yaml:"kind"`
	Unit        string           `yaml:"unit"`
	Units       []string         `yaml:"units"`
	ValueType   string           `yaml:"value_type"`
	Buckets     string           `yaml:"buckets"`
	Events      []string         `yaml:"events"`
	Snapshot    bool             `yaml:"snapshot"`
	Source      string           `yaml:"source"`
	Row         string           `yaml:"row"`
	AcceptKinds []string         `yaml:"accept_kinds"`
	CodeName    string           `yaml:"code_name"`
	Note        string           `yaml:"note"`
	Attributes  []InstrumentAttr `yaml:"attributes"`
	Bounds      []float64        `yaml:"-"`
}

type bucketSet struct {
	Name   string
	Bounds []float64
}

// Ident is the dotted name the generated identifiers are made from: the name, or code_name for
// an instrument whose name would give another's identifiers (gym.model.call_duration_ms and
// gym.model_call.duration_ms).
func (in *Instrument) Ident() string {
	if in.CodeName != "" {
		return in.CodeName
	}
	return in.Name
}

// Schema is metadata.yaml, validated, in document order.
type Schema struct {
	file
	Buckets      []bucketSet
	Attrs        []Attribute
	Instruments  []Instrument
	attrIndex    map[string]int
	bucketsIndex map[string]int
}

var (
	kinds      = map[string]string{"counter": "KindCounter", "updown": "KindUpDown", "gauge": "KindGauge", "histogram": "KindHistogram"}
	attrTypes  = map[string]string{"string": "AttrString", "int": "AttrInt", "bool": "AttrBool"}
	rules      = map[string]string{"string": "RuleString", "enum": "RuleEnum", "fallback_enum": "RuleFallbackEnum", "failure_kind": "RuleFailureKind", "identifier": "RuleIdentifier", "health_check": "RuleHealthCheck", "route": "RuleRoute", "status_code": "RuleStatusCode", "int_range": "RuleIntRange", "int_enum": "RuleIntEnum", "bool": "RuleBool", "reward_range": "RuleRewardRange", "phase": "RulePhase"}
	nameRe     = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	bucketName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// Parse reads and validates metadata.yaml.
func Parse(data []byte) (*Schema, error) {
	s := &Schema{attrIndex: map[string]int{}, bucketsIndex: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s.file); err != nil {
		return nil, fmt.Errorf("metadata.yaml: %w", err)
	}
	if s.SchemaVersion != 1 {
		return nil, fmt.Errorf("metadata.yaml: schema_version %d, want 1", s.SchemaVersion)
	}
	var errs []error
	if err := eachPair(&s.BucketBoundaries, func(k string, v *yaml.Node) error {
		var b []float64
		if err := v.Decode(&b); err != nil {
			return err
		}
		if !bucketName.MatchString(k) {
			return fmt.Errorf("bucket set %q: name must match %s", k, bucketName)
		}
		if len(b) == 0 || !slices.IsSorted(b) || len(slices.Compact(slices.Clone(b))) != len(b) {
			return fmt.Errorf("bucket set %s: boundaries must be strictly increasing and non-empty", k)
		}
		s.bucketsIndex[k] = len(s.Buckets)
		s.Buckets = append(s.Buckets, bucketSet{k, b})
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	if err := eachPair(&s.Attributes, func(k string, v *yaml.Node) error {
		var a Attribute
		if err := decodeStrict(v, &a); err != nil {
			return fmt.Errorf("attribute %s: %w", k, err)
		}
		a.Key = k
		if _, dup := s.attrIndex[k]; dup {
			return fmt.Errorf("attribute %s: defined twice", k)
		}
		if err := checkAttr(&a); err != nil {
			return err
		}
		if err := checkAliases(&a); err != nil {
			return err
		}
		if err := checkOTLPValues(&a); err != nil {
			return err
		}
		s.attrIndex[k] = len(s.Attrs)
		s.Attrs = append(s.Attrs, a)
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	if err := eachPair(&s.file.Instruments, func(k string, v *yaml.Node) error {
		var in Instrument
		if err := decodeStrict(v, &in); err != nil {
			return fmt.Errorf("instrument %s: %w", k, err)
		}
		in.Name = k
		if seen[k] {
			return fmt.Errorf("instrument %s: defined twice", k)
		}
		seen[k] = true
		if err := s.checkInstrument(&in); err != nil {
			return err
		}
		s.Instruments = append(s.Instruments, in)
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	if s.OverflowAttribute == "" || s.DefaultResource.SourceKey == "" || s.DefaultResource.FilePathKey == "" {
		errs = append(errs, errors.New("overflow_attribute and default_resource keys are required"))
	}
	if s.Limits.StringMaxBytes <= 0 || s.Limits.ResourceMaxAttributes <= 0 || s.Limits.ResourceMaxKeyBytes <= 0 || s.Limits.DefaultCardinalityLimit < 2 || s.Limits.DefaultMaxLineBytes <= 0 {
		errs = append(errs, errors.New("limits: every limit must be positive (cardinality limit at least 2)"))
	}
	if len(s.Registries.FailureKinds) == 0 || len(s.Registries.HealthChecks) == 0 {
		errs = append(errs, errors.New("registries: failure_kinds and health_checks are required"))
	}
	if err := s.checkTruncated(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("metadata.yaml: %w", err)
	}
	return s, nil
}

func decodeStrict(n *yaml.Node, v any) error {
	// Re-encode so that KnownFields applies to the sub-document.
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func eachPair(n *yaml.Node, f func(string, *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping", n.Line)
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		if err := f(n.Content[i].Value, n.Content[i+1]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkAttr(a *Attribute) error {
	if _, ok := attrTypes[a.Type]; !ok {
		return fmt.Errorf("attribute %s: type %q is not string, int or bool", a.Key, a.Type)
	}
	if _, ok := rules[a.Rule]; !ok {
		return fmt.Errorf("attribute %s: unknown rule %q", a.Key, a.Rule)
	}
	if a.Description == "" {
		return fmt.Errorf("attribute %s: description is required", a.Key)
	}
	need := func(cond bool, what string) error {
		if !cond {
			return fmt.Errorf("attribute %s: rule %s needs %s", a.Key, a.Rule, what)
		}
		return nil
	}
	switch a.Rule {
	case "enum", "reward_range":
		return need(len(a.Values) > 0, "values")
	case "phase":
		return need(len(a.Values) == 2, "two values (before, during)")
	case "fallback_enum":
		return need(len(a.Values) > 0 && a.Fallback != "", "values and fallback")
	case "failure_kind", "identifier":
		if err := need(a.Pattern != "" && a.MaxBytes > 0 && a.Fallback != "", "pattern, max_bytes and fallback"); err != nil {
			return err
		}
		_, err := regexp.Compile(a.Pattern)
		return err
	case "health_check":
		return need(a.Fallback != "", "fallback")
	case "route":
		return need(a.Fallback != "" && a.MaxBytes > 0, "fallback and max_bytes")
	case "status_code", "int_range":
		return need(a.Type == "int" && a.Min <= a.Max && a.Max > 0, "type int, min and max")
	case "int_enum":
		return need(a.Type == "int" && len(a.IntValues) > 0, "type int and int_values")
	case "bool":
		return need(a.Type == "bool", "type bool")
	case "string":
		return need(a.MaxBytes > 0, "max_bytes")
	}
	return nil
}

// enumOnly reports whether an attribute's list key of n values is to be checked: it has
// values, and only an enumeration may.
func enumOnly(a *Attribute, key string, n int) (bool, error) {
	if n == 0 {
		return false, nil
	}
	if a.Rule != "enum" && a.Rule != "fallback_enum" {
		return false, fmt.Errorf("attribute %s: %s are for enum and fallback_enum, not %s", a.Key, key, a.Rule)
	}
	return true, nil
}

// checkAliases holds aliases to values of the attribute's own, never one of them.
func checkAliases(a *Attribute) error {
	if ok, err := enumOnly(a, "aliases", len(a.Aliases)); !ok {
		return err
	}
	for _, p := range a.AliasPairs() {
		if slices.Contains(a.Values, p[0]) {
			return fmt.Errorf("attribute %s: alias %q is one of its values", a.Key, p[0])
		}
		if !slices.Contains(a.Values, p[1]) {
			return fmt.Errorf("attribute %s: alias %q reads as %q, not one of its values", a.Key, p[0], p[1])
		}
	}
	return nil
}

// checkOTLPValues holds OTLP-only values to enumerations, apart from the attribute's values and
// aliases.
func checkOTLPValues(a *Attribute) error {
	if ok, err := enumOnly(a, "otlp_values", len(a.OTLPValues)); !ok {
		return err
	}
	for _, v := range a.OTLPValues {
		if _, alias := a.Aliases[v]; alias || slices.Contains(a.Values, v) {
			return fmt.Errorf("attribute %s: otlp_values %q is one of its values or aliases", a.Key, v)
		}
	}
	return nil
}

func (s *Schema) checkInstrument(in *Instrument) error {
	if !nameRe.MatchString(in.Name) || in.CodeName != "" && !nameRe.MatchString(in.CodeName) {
		return fmt.Errorf("instrument %s: name and code_name must match %s", in.Name, nameRe)
	}
	if _, ok := kinds[in.Kind]; !ok {
		return fmt.Errorf("instrument %s: kind %q is not counter, updown, gauge or histogram", in.Name, in.Kind)
	}
	if in.Description == "" || in.Unit == "" || in.Group == "" {
		return fmt.Errorf("instrument %s: description, unit and group are required", in.Name)
	}
	for i, u := range in.Units {
		if u == in.Unit || slices.Contains(in.Units[:i], u) {
			return fmt.Errorf("instrument %s: units: %q listed twice (or its own unit)", in.Name, u)
		}
	}
	switch in.ValueType {
	case "":
		in.ValueType = "int"
	case "int", "double":
	default:
		return fmt.Errorf("instrument %s: value_type %q is not int or double", in.Name, in.ValueType)
	}
	switch in.Source {
	case "":
		in.Source = "events"
	case "events", "process", "run_files", "otlp", "derived", "spans", "prices":
	default:
		return fmt.Errorf("instrument %s: source %q is not events, process, run_files, otlp, derived, spans or prices", in.Name, in.Source)
	}
	if (in.Source == "events") != (len(in.Events) > 0) {
		return fmt.Errorf("instrument %s: events are required exactly for source events", in.Name)
	}
	if in.Source == "run_files" && in.Row == "" || in.Row != "" && in.Source != "run_files" && in.Source != "events" {
		return fmt.Errorf("instrument %s: row is required for source run_files, and only events may also have one", in.Name)
	}
	if len(in.AcceptKinds) > 0 {
		if in.AcceptKinds[0] != in.Kind {
			return fmt.Errorf("instrument %s: accept_kinds must start with its kind %s", in.Name, in.Kind)
		}
		for _, k := range in.AcceptKinds[1:] {
			// Only a gauge and a non-monotonic sum say the same thing (a value now).
			if (in.Kind != "gauge" || k != "updown") && (in.Kind != "updown" || k != "gauge") {
				return fmt.Errorf("instrument %s: accept_kinds: %q cannot stand for a %s", in.Name, k, in.Kind)
			}
		}
	}
	if in.Kind == "histogram" {
		i, ok := s.bucketsIndex[in.Buckets]
		if !ok {
			return fmt.Errorf("instrument %s: unknown bucket set %q", in.Name, in.Buckets)
		}
		in.Bounds = s.Buckets[i].Bounds
		in.ValueType = "double"
	} else if in.Buckets != "" {
		return fmt.Errorf("instrument %s: only histograms have buckets", in.Name)
	}
	keys := map[string]bool{}
	for _, a := range in.Attributes {
		i, ok := s.attrIndex[a.Key]
		if !ok {
			return fmt.Errorf("instrument %s: unknown attribute %q", in.Name, a.Key)
		}
		if keys[a.Key] {
			return fmt.Errorf("instrument %s: attribute %s listed twice", in.Name, a.Key)
		}
		keys[a.Key] = true
		for _, v := range a.Values {
			if !slices.Contains(s.Attrs[i].Values, v) {
				return fmt.Errorf("instrument %s: attribute %s narrows to %q, not one of its values", in.Name, a.Key, v)
			}
		}
		if a.Optional != (a.When != "") {
			return fmt.Errorf("instrument %s: attribute %s: optional and when go together", in.Name, a.Key)
		}
	}
	return nil
}

// GoName turns a dotted, snake_case name into a Go identifier: gym.sandbox.active -> GymSandboxActive.
func GoName(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

// Go renders internal/schema/schema_gen.go.
func (s *Schema) Go() ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by cmd/schemagen from metadata.yaml. DO NOT EDIT.\n\npackage schema\n\n")
	p("// Limits and keys of the schema.\nconst (\n")
	p("\tDefaultStringMaxBytes = %d\n\tResourceMaxAttributes = %d\n\tResourceMaxKeyBytes = %d\n\tDefaultCardinalityLimit = %d\n\tDefaultMaxLineBytes = %d\n",
		s.Limits.StringMaxBytes, s.Limits.ResourceMaxAttributes, s.Limits.ResourceMaxKeyBytes, s.Limits.DefaultCardinalityLimit, s.Limits.DefaultMaxLineBytes)
	p("\tOverflowAttribute = %q\n\tResourceSourceKey = %q\n\tResourceFilePathKey = %q\n)\n\n", s.OverflowAttribute, s.DefaultResource.SourceKey, s.DefaultResource.FilePathKey)
	p("// Bucket boundary sets.\nvar (\n")
	for _, bs := range s.Buckets {
		p("\tBuckets%s = []float64{%s}\n", GoName(strings.ToLower(bs.Name)), floats(bs.Bounds))
	}
	p(")\n\n// FailureKinds is NeMo Gym's failure-kind registry.\nvar FailureKinds = []string{%s}\n\n", quoted(s.Registries.FailureKinds))
	p("// HealthChecks is the registry of rollout health checks.\nvar HealthChecks = []string{%s}\n\n", quoted(s.Registries.HealthChecks))
	p("// TruncatedFinishReasons are the finish reasons of a response cut at its token limit.\nvar TruncatedFinishReasons = []string{%s}\n\n", quoted(s.Registries.TruncatedFinishReasons))
	p("// Attribute IDs.\nconst (\n")
	for i, a := range s.Attrs {
		if i == 0 {
			p("\tAttr%s AttrID = iota\n", GoName(a.Key))
		} else {
			p("\tAttr%s\n", GoName(a.Key))
		}
	}
	p("\tNumAttributes\n)\n\n// Attributes are the attribute keys of the schema, indexed by AttrID.\nvar Attributes = [NumAttributes]Attribute{\n")
	for _, a := range s.Attrs {
		p("\tAttr%s: {Key: %q, Type: %s, Rule: %s, Description: %q", GoName(a.Key), a.Key, attrTypes[a.Type], rules[a.Rule], a.Description)
		if a.Values != nil {
			p(", Values: []string{%s}", quoted(a.Values))
		}
		if a.IntValues != nil {
			p(", IntValues: []int64{%s}", ints(a.IntValues))
		}
		if a.Fallback != "" {
			p(", Fallback: %q", a.Fallback)
		}
		if a.Pattern != "" {
			p(", Pattern: %q", a.Pattern)
		}
		if a.MaxBytes != 0 {
			p(", MaxBytes: %d", a.MaxBytes)
		}
		if a.Rule == "status_code" || a.Rule == "int_range" {
			p(", Min: %d, Max: %d", a.Min, a.Max)
		}
		if a.OTLPValues != nil {
			p(", OTLPValues: []string{%s}", quoted(a.OTLPValues))
		}
		if len(a.Aliases) > 0 {
			p(", Aliases: []Alias{")
			for _, al := range a.AliasPairs() {
				p("{From: %q, To: %q}, ", al[0], al[1])
			}
			p("}")
		}
		p("},\n")
	}
	p("}\n\n// Instrument IDs.\nconst (\n")
	for i, in := range s.Instruments {
		if i == 0 {
			p("\t%s InstrumentID = iota\n", GoName(in.Ident()))
		} else {
			p("\t%s\n", GoName(in.Ident()))
		}
	}
	p("\tNumInstruments\n)\n\n// Instruments are the instruments of the schema, indexed by InstrumentID.\nvar Instruments = [NumInstruments]Instrument{\n")
	for _, in := range s.Instruments {
		p("\t%s: {\n\t\tName: %q, Description: %q, Group: %q,\n\t\tKind: %s, ValueType: Value%s, Unit: %q, Source: %q, Snapshot: %t,\n",
			GoName(in.Ident()), in.Name, in.Description, in.Group, kinds[in.Kind], GoName(in.ValueType), in.Unit, in.Source, in.Snapshot)
		if in.Kind == "histogram" {
			p("\t\tBuckets: %q, Bounds: Buckets%s,\n", in.Buckets, GoName(strings.ToLower(in.Buckets)))
		}
		if len(in.Events) > 0 {
			p("\t\tEvents: []string{%s},\n", quoted(in.Events))
		}
		if in.Row != "" {
			p("\t\tRow: %q,\n", in.Row)
		}
		if in.Units != nil {
			p("\t\tUnits: []string{%s},\n", quoted(in.Units))
		}
		if len(in.AcceptKinds) > 0 {
			var ks []string
			for _, k := range in.AcceptKinds {
				ks = append(ks, kinds[k])
			}
			p("\t\tAcceptKinds: []Kind{%s},\n", strings.Join(ks, ", "))
		}
		if in.Note != "" {
			p("\t\tNote: %q,\n", in.Note)
		}
		if len(in.Attributes) > 0 {
			p("\t\tAttrs: []InstrumentAttr{\n")
			for _, a := range in.Attributes {
				p("\t\t\t{ID: Attr%s", GoName(a.Key))
				if a.Values != nil {
					p(", Values: []string{%s}", quoted(a.Values))
				}
				if a.Optional {
					p(", Optional: true, When: %q", a.When)
				}
				p("},\n")
			}
			p("\t\t},\n")
		}
		p("\t},\n")
	}
	p("}\n")
	return format.Source(b.Bytes())
}

func floats(fs []float64) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.Join(out, ", ")
}

func ints(is []int64) string {
	out := make([]string, len(is))
	for i, v := range is {
		out[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(out, ", ")
}

func quoted(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return strings.Join(out, ", ")
}

// checkTruncated: the truncated finish reasons are values the finish-reason attribute keeps,
// or no series would ever carry them.
func (s *Schema) checkTruncated() error {
	const key = "nemo.gym.rollout.finish_reason"
	if len(s.Registries.TruncatedFinishReasons) == 0 {
		return errors.New("registries: truncated_finish_reasons is required")
	}
	i, ok := s.attrIndex[key]
	if !ok {
		return fmt.Errorf("registries: truncated_finish_reasons: no attribute %s", key)
	}
	for _, r := range s.Registries.TruncatedFinishReasons {
		if !slices.Contains(s.Attrs[i].Values, r) {
			return fmt.Errorf("registries: truncated_finish_reasons: %q is not a value of %s", r, key)
		}
	}
	return nil
}
