package events

import (
	"strings"
	"testing"
)

func TestNameTables(t *testing.T) {
	for i, n := range keyNames {
		if got := lookupKey([]byte(n)); got != i {
			t.Errorf("key %q: %d, want %d", n, got, i)
		}
		for _, other := range []string{n + "x", n[:len(n)-1], strings.ToUpper(n), "x" + n[1:]} {
			if got := lookupKey([]byte(other)); got >= 0 && keyNames[got] != other {
				t.Errorf("%q found as %q", other, keyNames[got])
			}
		}
	}
	for i, n := range EventNames {
		if got := lookupEvent([]byte(n)); got != EventType(i) {
			t.Errorf("event %q: %v, want %v", n, got, EventType(i))
		}
	}
	for _, n := range []string{"", "x", "resourcE", "gc.paus", "gc.pauses", "ts"} {
		if lookupKey([]byte(n)) != -1 && n != "" {
			t.Errorf("key %q found", n)
		}
		if lookupEvent([]byte(n)) != EventUnknown {
			t.Errorf("event %q found", n)
		}
	}
}
