package events

import (
	"testing"
)

func TestDecodeReuseLeaksNothing(t *testing.T) {
	d := NewDecoder(0)
	var ev Event
	full := []string{
		`{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":"t","worker":true,"duration_ms":1}`,
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":"c","failure_kind":"k","failure_type":"T","reward":1,"masked":true}`,
		`{"event":"rollout.health","verdict":"healthy","outcome":"scored","flagged_checks":["a","b"]}`,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":1,"responses":{"200":1},"cancelled":[{"route":"/a","response_started":true,"count":1}],"outbound_in_flight":1}`,
		`{"event":"http.pool.connects","counts":{"a":1}}`,
		`{"event":"resource","attributes":{"a":1}}`,
		`{"event":"rollout.size","input_items":1,"output_items":1,"turns":1,"tool_calls":1}`,
		`{"event":"rollout.reward","reward":0.5,"dispatch_name":"m","masked":true}`,
	}
	sparse := []string{
		`{"event":"server.startup_stage","stage":"s","server_name":"n","duration_ms":1}`,
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m"}`,
		`{"event":"rollout.health","verdict":"healthy","outcome":"scored"}`,
		`{"event":"server.requests","in_flight":1,"unhandled_exceptions":1,"responses":{}}`,
		`{"event":"http.pool.connects","counts":{}}`,
		`{"event":"resource","attributes":{}}`,
		`{"event":"rollout.size"}`,
		`{"event":"rollout.reward","reward":NaN,"dispatch_name":"n"}`,
	}
	for _, f := range full {
		for _, s := range sparse {
			if err := d.Decode([]byte(f), &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := d.Decode([]byte(s), &ev); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			got := eventString(&ev)
			want, _ := decodeOne(t, s)
			if got != eventString(want) {
				t.Errorf("after %s\n got %s\nwant %s", f, got, eventString(want))
			}
			if ev.ServerType != nil || ev.FailureKind != nil || ev.FailureClass != nil || ev.FailureType != nil {
				t.Errorf("after %s: stale optional strings in %s", f, got)
			}
		}
	}
}

// TestDecodeReuseClearsEverything decodes every kind of line, then an unknown event, on the
// same decoder and Event: nothing of the first may remain.
func TestDecodeReuseClearsEverything(t *testing.T) {
	lines := append([]string{
		`{"event":"rollout.completed","outcome":"failed","dispatch_name":"m","failure_class":"c","failure_kind":"k","failure_type":"T","reward":1,"masked":true}`,
		`{"event":"server.startup_stage","stage":"s","server_name":"n","server_type":"t","worker":true,"duration_ms":1}`,
		`{"event":"gc.pause","generation":2,"duration_ms":1}`,
	}, validMix...)
	d := NewDecoder(0)
	var ev Event
	unknown := func(after string) {
		t.Helper()
		if err := d.Decode([]byte(`{"event":"unknown"}`), &ev); err != nil {
			t.Fatal(err)
		}
		if got := eventString(&ev); got != "" {
			t.Errorf("after %s: %s", after, got)
		}
	}
	const breaking = `"duration_ms":-1,"in_flight":-1,"attributes":7,"counts":[],"offered":"x","generation":9,"collections":[1,2,3,4],"turns":-1,"provider":"","outcome":"x","loop":1,"reward":"x"}`
	for _, l := range lines {
		if err := d.Decode([]byte(l), &ev); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		typ := ev.Type
		unknown(l)
		if typ == EventUnknown {
			continue
		}
		// A rejected line of the same type after it.
		if err := d.Decode([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		bad := l[:len(l)-1] + `,"event":"` + typ.String() + `",` + breaking
		if err := d.Decode([]byte(bad), &ev); err == nil {
			t.Fatalf("%s: accepted", bad)
		}
		unknown(bad)
	}
	// Another Event on the same decoder is cleared in full.
	ev2 := ev
	ev2.Provider, ev2.Tasks = b("stale"), 9
	if err := d.Decode([]byte(`{"event":"unknown"}`), &ev2); err != nil {
		t.Fatal(err)
	}
	if got := eventString(&ev2); got != "" {
		t.Errorf("fresh Event: %s", got)
	}
}
