package flinksql_test

import (
	"testing"

	"github.com/sluice/sluice/integration/flinksql"
)

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b             string
		semantic, strict bool // equal in either form
	}{
		{`{"b":1,"a":"x"}`, `{"a":"x","b":1}`, true, true},
		{`{"d":7.00}`, `{"d":7}`, true, false},
		{`{"d":1E+1}`, `{"d":10}`, true, false},
		{`{"d":0.5}`, `{"d":0.50}`, true, false},
		{`{"t":"2026-01-01 00:00:00"}`, `{"t":"2026-01-01 00:00:00.000"}`, true, false},
		{`{"t":"2026-01-01 00:00:00.5"}`, `{"t":"2026-01-01 00:00:00.500"}`, true, false},
		{`{"t":"2026-01-01 00:00:00.5"}`, `{"t":"2026-01-01 00:00:00.05"}`, false, false},
		{`{"d":1.1}`, `{"d":1.10000001}`, false, false},
		{`{"a":[1,{"y":2,"x":1}]}`, `{"a":[1,{"x":1,"y":2}]}`, true, true},
		{`{"s":"7.00"}`, `{"s":"7"}`, false, false}, // strings stay strings
	} {
		for _, semantic := range []bool{true, false} {
			a, err := flinksql.CanonicalJSON([]byte(tc.a), semantic)
			if err != nil {
				t.Fatal(err)
			}
			b, err := flinksql.CanonicalJSON([]byte(tc.b), semantic)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.strict
			if semantic {
				want = tc.semantic
			}
			if (a == b) != want {
				t.Errorf("%s vs %s (semantic %v): %q, %q: equal %v, want %v", tc.a, tc.b, semantic, a, b, a == b, want)
			}
		}
	}
	if got, _ := flinksql.CanonicalJSON(nil, true); got != "null" {
		t.Errorf("a tombstone is %q, want null", got)
	}
	if _, err := flinksql.CanonicalJSON([]byte(`{"a":`), true); err == nil {
		t.Error("malformed JSON accepted")
	}
}
