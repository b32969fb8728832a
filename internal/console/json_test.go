package console

import (
	"math"
	"testing"
)

// pyTokens rewrites exactly the tokens gymjson takes for Python's, outside strings.
func TestPyTokens(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":NaN,"b":-Infinity,"c":[Infinity,1]}`, `{"a":"\u0000NaN","b":"\u0000-Infinity","c":["\u0000Infinity",1]}`},
		{`{"a":"NaN \" Infinity","b":-1.5e3}`, `{"a":"NaN \" Infinity","b":-1.5e3}`},
		{`{"a":-NaN}`, `{"a":-"\u0000NaN"}`}, // not a token: encoding/json rejects what is left
		{`{"a":nan,"I":1}`, `{"a":nan,"I":1}`},
	}
	for _, c := range cases {
		got, _ := pyTokens([]byte(c.in), nil)
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
	if f, ok := pyFloat("\x00NaN"); !ok || !math.IsNaN(f) {
		t.Error("NaN")
	}
	if f, ok := pyFloat("\x00-Infinity"); !ok || f != math.Inf(-1) {
		t.Error("-Infinity")
	}
	if _, ok := pyFloat("NaN"); ok {
		t.Error("a plain string NaN is a string")
	}
}
