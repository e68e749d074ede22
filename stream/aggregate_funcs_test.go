package stream_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/sluice/sluice/stream"
)

// TestAggregateFuncsFieldsNameTheirMethods: AggregateFuncs has one field
// per method of AggregateFunction, named for the method with "Fn", and
// each method calls its field.
func TestAggregateFuncsFieldsNameTheirMethods(t *testing.T) {
	iface := reflect.TypeFor[stream.AggregateFunction[int, int, string]]()
	funcs := reflect.TypeFor[stream.AggregateFuncs[int, int, string]]()
	if funcs.NumField() != iface.NumMethod() {
		t.Errorf("AggregateFuncs has %d fields for %d methods", funcs.NumField(), iface.NumMethod())
	}
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		f, ok := funcs.FieldByName(m.Name + "Fn")
		if !ok {
			t.Errorf("AggregateFuncs has no field %sFn for method %s", m.Name, m.Name)
			continue
		}
		if f.Type != m.Type {
			t.Errorf("field %s is %s, method %s is %s", f.Name, f.Type, m.Name, m.Type)
		}
	}

	var agg stream.AggregateFunction[int, int, string] = stream.AggregateFuncs[int, int, string]{
		CreateAccumulatorFn: func() int { return 100 },
		AddFn:               func(v, acc int) int { return acc + v },
		ResultFn:            func(acc int) string { return strconv.Itoa(acc) },
		MergeFn:             func(a, b int) int { return a * b },
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"CreateAccumulator", agg.CreateAccumulator(), 100},
		{"Add", agg.Add(5, 1), 6},
		{"Result", agg.Result(7), "7"},
		{"Merge", agg.Merge(3, 4), 12},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
