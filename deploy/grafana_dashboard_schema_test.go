package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/gauge"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/text"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The dashboards against Grafana's own schema, as the Grafana Foundation SDK publishes it (Go
// types generated from Grafana's CUE schemas): strict decoding rejects a field the schema does
// not have, a required field left out and a value of the wrong type.

// sdkErr is err, or nil for the empty cog.BuildErrors that the SDK's strict decoders return on
// success.
func sdkErr(err error) error {
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

// registerGrafanaSchemas registers the Options and FieldConfig of the panel types a dashboard
// here may use, and Prometheus' data query (every data source here is Prometheus). Not the
// SDK's plugins.RegisterDefaultPlugins: its cloud data sources' packages double the test's
// compile time. A panel of another type fails the check until its package is added here.
func registerGrafanaSchemas() {
	rt := cog.NewRuntime()
	for _, v := range []variants.PanelcfgConfig{timeseries.VariantConfig(), stat.VariantConfig(), heatmap.VariantConfig(),
		table.VariantConfig(), bargauge.VariantConfig(), gauge.VariantConfig(), text.VariantConfig()} {
		rt.RegisterPanelcfgVariant(v)
	}
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
}

// checkGrafanaDashboard decodes a dashboard strictly: the dashboard, its links, variables and
// annotations, and every panel with the Options and FieldConfig of its type, then what the
// SDK's strict decoding leaves loose.
func checkGrafanaDashboard(raw []byte) error {
	registerGrafanaSchemas()
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(raw)); err != nil {
		return err
	}
	if err := d.Validate(); err != nil {
		return err
	}
	var doc struct{ Panels []json.RawMessage }
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	for i, rp := range doc.Panels {
		var p struct {
			Type        string
			FieldConfig json.RawMessage
			Targets     []json.RawMessage
		}
		if err := json.Unmarshal(rp, &p); err != nil {
			return err
		}
		// A type the SDK does not know gets its options as a plain map, unchecked.
		if _, ok := cog.ConfigForPanelcfgVariant(p.Type); !ok {
			return fmt.Errorf("panels[%d]: no schema for panel type %q", i, p.Type)
		}
		// The SDK decodes fieldConfig loosely but for defaults.custom.
		if p.FieldConfig != nil {
			var fc dashboard.FieldConfigSource
			if err := sdkErr(fc.UnmarshalJSONStrict(p.FieldConfig)); err != nil {
				return fmt.Errorf("panels[%d].fieldConfig: %w", i, err)
			}
		}
		// The SDK checks a target only when the target's own datasource names its type; every
		// data source here is Prometheus.
		for j, rt := range p.Targets {
			var q prometheus.Dataquery
			if err := sdkErr(q.UnmarshalJSONStrict(rt)); err != nil {
				return fmt.Errorf("panels[%d].targets[%d]: %w", i, j, err)
			}
			if err := q.Validate(); err != nil {
				return fmt.Errorf("panels[%d].targets[%d]: %w", i, j, err)
			}
		}
	}
	return nil
}

func TestGrafanaDashboardSchema(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("grafana", "dashboards", "*.json"))
	kps, _ := filepath.Glob(filepath.Join(KubePrometheusStackDir, "dashboards", "*.json"))
	if len(files) == 0 || len(kps) != len(files) {
		t.Fatalf("dashboards: %d in grafana/, %d in the kube-prometheus-stack overlay", len(files), len(kps))
	}
	for _, f := range append(files, kps...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkGrafanaDashboard(raw); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The check rejects a dashboard with a misspelled or misplaced field, wherever it is.
func TestGrafanaDashboardSchemaRejects(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("grafana", "dashboards", "gym-rollouts.json"))
	if err != nil {
		t.Fatal(err)
	}
	obj := func(v any, path ...any) map[string]any {
		for _, k := range path {
			if i, ok := k.(int); ok {
				v = v.([]any)[i]
			} else {
				v = v.(map[string]any)[k.(string)]
			}
		}
		return v.(map[string]any)
	}
	move := func(from map[string]any, key string, to map[string]any, as string) {
		to[as] = from[key]
		delete(from, key)
	}
	panel := func(d map[string]any) map[string]any { return obj(d, "panels", 0) }
	cases := []struct {
		name, want string // want: what the error names
		mutate     func(d map[string]any)
	}{
		{"dashboard field misspelled", "refersh", func(d map[string]any) { move(d, "refresh", d, "refersh") }},
		{"link field misspelled", "keeptime", func(d map[string]any) { l := obj(d, "links", 0); move(l, "keepTime", l, "keeptime") }},
		{"variable field misspelled", "includeALL", func(d map[string]any) {
			v := obj(d, "templating", "list", 1)
			move(v, "includeAll", v, "includeALL")
		}},
		{"panel type misspelled", "timeseriess", func(d map[string]any) { panel(d)["type"] = "timeseriess" }},
		{"option on the panel", "'legend'", func(d map[string]any) { move(obj(panel(d), "options"), "legend", panel(d), "legend") }},
		{"option misspelled", "showlegend", func(d map[string]any) {
			l := obj(panel(d), "options", "legend")
			move(l, "showLegend", l, "showlegend")
		}},
		{"unit under custom", "custom.GraphFieldConfig: unexpected field 'unit'", func(d map[string]any) {
			move(obj(panel(d), "fieldConfig", "defaults"), "unit", obj(panel(d), "fieldConfig", "defaults", "custom"), "unit")
		}},
		{"field config misspelled", "units", func(d map[string]any) { f := obj(panel(d), "fieldConfig", "defaults"); move(f, "unit", f, "units") }},
		{"target field misspelled", "legendformat", func(d map[string]any) {
			q := obj(panel(d), "targets", 0)
			move(q, "legendFormat", q, "legendformat")
		}},
		{"target without datasource type, misspelled", "'exp'", func(d map[string]any) {
			q := obj(panel(d), "targets", 0)
			delete(obj(q, "datasource"), "type")
			move(q, "expr", q, "exp")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			c.mutate(d)
			bad, _ := json.Marshal(d)
			if err := checkGrafanaDashboard(bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error naming %s", err, c.want)
			}
		})
	}
}
