package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

var jsonFields = []planner.Field{
	{Name: "s", Type: types.STRING}, {Name: "n", Type: types.INT}, {Name: "d", Type: types.DecimalOf(12, 2)},
	{Name: "ts", Type: types.TimestampOf(3)}, {Name: "b", Type: types.BOOLEAN}, {Name: "f", Type: types.DOUBLE},
}

func TestJSONDecode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		in    string
		want  string // fmt of the values, or "skip", or "error"
		nulls int
	}{
		{"all types", nil, `{"s":"x","n":7,"d":12.5,"ts":"2024-01-01 10:00:00.25","b":true,"f":1e3}`, "[x 7 1250 1704103200250 true 1000]", 0},
		{"numbers as text", nil, `{"s":12,"n":"7","d":"0.015","ts":null,"b":"TRUE","f":"2.5"}`, "[12 7 2 <nil> true 2.5]", 0},
		{"missing fields are NULL", nil, `{"s":"x"}`, "[x <nil> <nil> <nil> <nil> <nil>]", 0},
		{"missing field fails", map[string]string{"json.fail-on-missing-field": "true"}, `{"s":"x"}`, "error", 0},
		{"not JSON fails", nil, `{"s":`, "error", 0},
		{"not JSON is skipped", map[string]string{"json.ignore-parse-errors": "true"}, `nope`, "skip", 0},
		{"a bad field fails", nil, `{"n":"seven"}`, "error", 0},
		{"a bad field is NULL", map[string]string{"json.ignore-parse-errors": "true"}, `{"n":"seven","s":"x"}`, "[x <nil> <nil> <nil> <nil> <nil>]", 1},
		{"ISO timestamps", map[string]string{"json.timestamp-format.standard": "ISO-8601"}, `{"ts":"2024-01-01T10:00:00"}`, "[<nil> <nil> <nil> 1704103200000 <nil> <nil>]", 0},
		{"SQL timestamps refuse T", nil, `{"ts":"2024-01-01T10:00:00"}`, "error", 0},
		{"a tombstone is skipped", nil, "", "skip", 0},
		{"escapes", nil, `{"s":"a\"\u00e9\ud83d\ude00\n"}`, "[a\"é😀\n <nil> <nil> <nil> <nil> <nil>]", 0},
		{"nested values as text, unknown fields ignored", nil, `{"x":{"y":"}"},"s":{"a":[1,"]"]}}`, `[{"a":[1,"]"]} <nil> <nil> <nil> <nil> <nil>]`, 0},
		{"trailing data fails", nil, `{"s":"x"} y`, "error", 0},
		{"a bad number fails", nil, `{"n":01}`, "error", 0},
		{"exponent decimals", nil, `{"d":1.5e1}`, "[<nil> <nil> 1500 <nil> <nil> <nil>]", 0},
		{"an overflowing decimal is NULL", nil, `{"d":12345678901.5}`, "[<nil> <nil> <nil> <nil> <nil> <nil>]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newJSONFormat(tc.opts, "json.", jsonFields)
			if err != nil {
				t.Fatal(err)
			}
			in := []byte(tc.in)
			if tc.in == "" {
				in = nil
			}
			dst := make([]any, len(jsonFields))
			nulls, err := f.decode(in, dst)
			got := fmt.Sprint(dst)
			switch {
			case errors.Is(err, errSkip):
				got = "skip"
			case err != nil:
				got = "error"
			}
			if got != tc.want || nulls != tc.nulls {
				t.Errorf("decode(%s) = %s (%d nulled, err %v), want %s (%d nulled)", tc.in, got, nulls, err, tc.want, tc.nulls)
			}
		})
	}
}

func TestJSONEncode(t *testing.T) {
	f, err := newJSONFormat(nil, "json.", jsonFields)
	if err != nil {
		t.Fatal(err)
	}
	row := []any{"a\"b\n\x01é<", int64(-3), int64(700), int64(1704103260000), false, 0.5}
	got := string(f.encode(nil, row, []int{0, 1, 2, 3, 4, 5}))
	want := `{"s":"a\"b\n\u0001é<","n":-3,"d":7,"ts":"2024-01-01 10:01:00","b":false,"f":0.5}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A format's fields are those of the indexes it encodes.
	st, _ := newJSONFormat(nil, "json.", []planner.Field{jsonFields[0], jsonFields[3]})
	nulls := string(st.encode(nil, []any{nil, nil, nil, nil, nil, nil}, []int{0, 3}))
	if nulls != `{"s":null,"ts":null}` {
		t.Errorf("nulls: %s", nulls)
	}
	g, _ := newJSONFormat(map[string]string{"json.encode.ignore-null-fields": "true"}, "json.", jsonFields[:2])
	if s := string(g.encode(nil, []any{nil, int64(1), nil, nil, nil, nil}, []int{0, 1})); s != `{"n":1}` {
		t.Errorf("ignore-null-fields: %s", s)
	}
	if _, err := newJSONFormat(map[string]string{"json.fail-on-missing-field": "true", "json.ignore-parse-errors": "true"}, "json.", nil); err == nil {
		t.Error("fail-on-missing-field and ignore-parse-errors together are accepted")
	}
}

func TestWindowAssign(t *testing.T) {
	const min = 60000
	for _, tc := range []struct {
		w    planner.Window
		ts   int64
		want []int64 // start, end pairs
	}{
		{planner.Window{Kind: "TUMBLE", Size: min}, 90000, []int64{60000, 120000}},
		{planner.Window{Kind: "TUMBLE", Size: min}, -1, []int64{-60000, 0}},
		{planner.Window{Kind: "TUMBLE", Size: min, Offset: 10000}, 5000, []int64{-50000, 10000}},
		{planner.Window{Kind: "HOP", Size: 3 * min, Slide: min}, 90000, []int64{-60000, 120000, 0, 180000, 60000, 240000}},
		{planner.Window{Kind: "CUMULATE", Size: 3 * min, Slide: min}, 90000, []int64{0, 120000, 0, 180000}},
	} {
		var got []int64
		_ = tc.w.Assign(tc.ts, func(s, e int64) error { got = append(got, s, e); return nil })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s at %d: %v, want %v", tc.w, tc.ts, got, tc.want)
		}
	}
}

// FuzzJSONDecode checks the scanner against encoding/json: a document
// both accept as an object decodes, one encoding/json rejects fails.
func FuzzJSONDecode(f *testing.F) {
	f.Add(`{"s":"x","n":7,"d":12.5}`)
	f.Add(`{"s":"\u00e9","x":[1,{"a":null}]}`)
	f.Add(`{"s":`)
	f.Fuzz(func(t *testing.T, in string) {
		fm, _ := newJSONFormat(map[string]string{"json.ignore-parse-errors": "true"}, "json.", jsonFields)
		dst := make([]any, len(jsonFields))
		_, err := fm.decode([]byte(in), dst)
		var obj map[string]any
		stdErr := json.Unmarshal([]byte(in), &obj)
		if stdErr != nil && !errors.Is(err, errSkip) && utf8.ValidString(in) {
			t.Errorf("%q: accepted, encoding/json says %v", in, stdErr)
		}
		if stdErr == nil && obj != nil && errors.Is(err, errSkip) {
			t.Errorf("%q: skipped, encoding/json accepts it", in)
		}
	})
}
