package json_test

import (
	stdjson "encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/json"
)

type address struct {
	City string `json:"city"`
	Zip  string `json:"zip,omitempty"`
}

type Base struct {
	ID string `json:"id"`
}

type order struct {
	Base
	Amount   float64  `json:"amount"`
	Customer string   // no tag: the Go name
	Note     *string  `json:"note,omitempty"`
	Ship     address  `json:"ship"`
	Tags     []string `json:"tags"`
	Skipped  int      `json:"-"`
	internal int
}

func TestDeserialize(t *testing.T) {
	full := `{"id":"o1","amount":2.5,"Customer":"c","ship":{"city":"Oslo"},"tags":["a"]}`
	for _, tc := range []struct {
		name  string
		opts  json.Options
		in    string
		want  order
		kind  error  // the error's sentinel; nil: no error
		about string // in the error text
	}{
		{name: "full", in: full, want: order{Base: Base{"o1"}, Amount: 2.5, Customer: "c", Ship: address{City: "Oslo"}, Tags: []string{"a"}}},
		{name: "unknown fields ignored", in: `{"id":"o1","extra":{"x":[1,2]},"amount":1}`, want: order{Base: Base{"o1"}, Amount: 1}},
		{name: "case-insensitive names", in: `{"ID":"o1","customer":"c"}`, want: order{Base: Base{"o1"}, Customer: "c"}},
		{name: "missing fields are zero by default", in: `{"id":"o1"}`, want: order{Base: Base{"o1"}}},
		{name: "fail-on-missing-field: all present", opts: json.Options{FailOnMissingField: true}, in: full,
			want: order{Base: Base{"o1"}, Amount: 2.5, Customer: "c", Ship: address{City: "Oslo"}, Tags: []string{"a"}}},
		{name: "fail-on-missing-field: top level", opts: json.Options{FailOnMissingField: true},
			in: `{"id":"o1","Customer":"c","ship":{"city":"Oslo"},"tags":null}`, kind: formats.ErrMissingField, about: `field "amount" is missing`},
		{name: "fail-on-missing-field: embedded", opts: json.Options{FailOnMissingField: true},
			in: `{"amount":1,"Customer":"c","ship":{"city":"Oslo"},"tags":[]}`, kind: formats.ErrMissingField, about: `field "id"`},
		{name: "fail-on-missing-field: nested", opts: json.Options{FailOnMissingField: true},
			in: `{"id":"o1","amount":1,"Customer":"c","ship":{"zip":"0150"},"tags":[]}`, kind: formats.ErrMissingField, about: `field "ship.city"`},
		{name: "fail-on-missing-field: escaped key", opts: json.Options{FailOnMissingField: true},
			in:   `{"\u0069d":"o1","amount":1,"Customer":"c","ship":{"city":"a\"}"},"tags":[]}`,
			want: order{Base: Base{"o1"}, Amount: 1, Customer: "c", Ship: address{City: `a"}`}, Tags: []string{}}},
		{name: "syntax error", in: `{"id":"secret-payload`, kind: formats.ErrMalformed, about: "invalid JSON at byte offset"},
		{name: "type error", in: `{"id":"o1","amount":"12345"}`, kind: formats.ErrMalformed, about: `field "amount": a JSON string cannot be read into Go float64`},
		{name: "ignore-parse-errors: type error zeroes the field", opts: json.Options{IgnoreParseErrors: true},
			in: `{"id":"o1","amount":"12345","Customer":"c"}`, want: order{Base: Base{"o1"}, Customer: "c"}},
		{name: "ignore-parse-errors: bad syntax skips", opts: json.Options{IgnoreParseErrors: true}, in: `{"id":`, kind: formats.ErrSkip},
		{name: "not an object", in: `[1,2]`, kind: formats.ErrMalformed, about: "a JSON array cannot be read into Go json_test.order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := json.MustNew[order](tc.opts)
			got, err := f.Deserialize("orders", []byte(tc.in))
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("Deserialize: %v", err)
				}
				if a, b := mustJSON(t, got), mustJSON(t, tc.want); a != b {
					t.Fatalf("got %s, want %s", a, b)
				}
				return
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v, want %v", err, tc.kind)
			}
			var fe *formats.Error
			if !errors.As(err, &fe) || fe.Format != "json" || fe.Op != "decode" {
				t.Fatalf("error %#v is not a json decode *formats.Error", err)
			}
			if !strings.Contains(err.Error(), tc.about) {
				t.Fatalf("error %q does not say %q", err, tc.about)
			}
			for _, secret := range []string{"secret", "12345"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes the payload", err)
				}
			}
		})
	}
}

func TestTombstoneIsSkipped(t *testing.T) {
	_, err := json.MustNew[order](json.Options{}).Deserialize("orders", nil)
	if !errors.Is(err, formats.ErrSkip) {
		t.Fatalf("tombstone: %v, want ErrSkip", err)
	}
	var s interface{ SkipRecord() bool }
	if !errors.As(err, &s) || !s.SkipRecord() {
		t.Fatalf("tombstone error %v does not say SkipRecord", err)
	}
}

func TestRoundTrip(t *testing.T) {
	f := json.MustNew[order](json.Options{FailOnMissingField: true})
	note := "n"
	in := order{Base: Base{"o1"}, Amount: 3, Customer: "c", Note: &note, Ship: address{City: "Oslo", Zip: "1"}, Tags: []string{"x"}}
	b, err := f.Serialize("orders", in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Deserialize("orders", b)
	if err != nil {
		t.Fatalf("reading back %s: %v", b, err)
	}
	if mustJSON(t, in) != mustJSON(t, out) {
		t.Fatalf("round trip: %+v != %+v", out, in)
	}
	if _, err := json.MustNew[float64](json.Options{}).Serialize("t", -zero()/zero()); !errors.Is(err, formats.ErrEncode) {
		t.Fatalf("NaN: %v, want ErrEncode", err)
	}
}

func zero() float64 { return 0 }

func TestOptions(t *testing.T) {
	if _, err := json.New[order](json.Options{FailOnMissingField: true, IgnoreParseErrors: true}); !errors.Is(err, json.ErrInvalidOptions) {
		t.Fatalf("both policies: %v, want ErrInvalidOptions", err)
	}
	o, err := json.ParseOptions(map[string]string{"json.fail-on-missing-field": "true", "ignore-parse-errors": "false"})
	if err != nil || o != (json.Options{FailOnMissingField: true}) {
		t.Fatalf("ParseOptions: %+v, %v", o, err)
	}
	_, err = json.ParseOptions(map[string]string{"json.fail-on-missing-field": "yes", "json.bogus": "1"})
	if !errors.Is(err, json.ErrInvalidOptions) || !strings.Contains(err.Error(), `unknown option "json.bogus"`) || !strings.Contains(err.Error(), `"yes" is not true or false`) {
		t.Fatalf("ParseOptions of bad keys: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := stdjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func FuzzDeserialize(f *testing.F) {
	f.Add([]byte(`{"id":"o1","amount":1,"Customer":"c","ship":{"city":"x"},"tags":[]}`))
	f.Add([]byte(`{"\u0069d":"o1","ship":{"city":"a\"}"}}`))
	f.Add([]byte(`[]`))
	strict := json.MustNew[order](json.Options{FailOnMissingField: true})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := strict.Deserialize("t", b)
		var fe *formats.Error
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is not a *formats.Error", err)
		}
	})
}
