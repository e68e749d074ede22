package exec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

var csvFields = []planner.Field{{Name: "s", Type: types.STRING}, {Name: "n", Type: types.INT}, {Name: "d", Type: types.DecimalOf(12, 2)}}

func TestCSVDecode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		in    string
		want  string // fmt of the values, or "skip", or the error
		nulls int
	}{
		{"plain", nil, `x,7,12.5`, "[x 7 1250]", 0},
		{"quoted with a delimiter, a doubled quote and a line feed", nil, "\"a,\"\"b\"\"\nc\",7,1", "[a,\"b\"\nc 7 100]", 0},
		{"an empty string is no NULL; an empty number fails", nil, `,,1`, `failed to deserialize CSV row ',,1': field 'n' (INT): cannot read "" as INT`, 0},
		{"null literal", map[string]string{"csv.null-literal": "null"}, `null,null,null`, "[<nil> <nil> <nil>]", 0},
		{"trailing CR is no data", nil, "x,7,1\r\n", "[x 7 100]", 0},
		{"escape character", map[string]string{"csv.escape-character": `\`}, `a\,b,7,1`, "[a,b 7 100]", 0},
		{"quote character", map[string]string{"csv.quote-character": "'"}, `'a,b',7,1`, "[a,b 7 100]", 0},
		{"quoting disabled", map[string]string{"csv.disable-quote-character": "true"}, `"a,7,1`, "[\"a 7 100]", 0},
		{"tab delimiter", map[string]string{"csv.field-delimiter": `\t`}, "a b\t7\t1", "[a b 7 100]", 0},
		{"unterminated quote", nil, `"a,7,1`, `failed to deserialize CSV row '"a,7,1': missing closing quote for value (field 1)`, 0},
		{"text after a quoted value", nil, `"a"b,7,1`, `failed to deserialize CSV row '"a"b,7,1': expected separator (',') or end of record after the quoted value of field 1, found 'b'`, 0},
		{"too few fields", nil, `a,7`, `failed to deserialize CSV row 'a,7': row length mismatch: 3 fields expected but was 2`, 0},
		{"too many fields", nil, `a,7,1,2`, `failed to deserialize CSV row 'a,7,1,2': too many entries: expected at most 3, found 4`, 0},
		{"too few fields are NULL when ignoring", map[string]string{"csv.ignore-parse-errors": "true"}, `a`, "[a <nil> <nil>]", 0},
		{"too many fields skip when ignoring", map[string]string{"csv.ignore-parse-errors": "true"}, `a,7,1,2`, "skip", 0},
		{"a bad field is NULL when ignoring", map[string]string{"csv.ignore-parse-errors": "true"}, `a,seven,x`, "[a <nil> <nil>]", 2},
		{"a comment line", map[string]string{"csv.allow-comments": "true"}, `# a,7,1`, "skip", 0},
		{"a comment without allow-comments is data", nil, `# a,7,1`, "[# a 7 100]", 0},
		{"an empty record", nil, ``, "skip", 0},
		{"decimal out of precision is NULL (Flink's fromBigDecimal)", nil, `a,1,1e20`, "[a 1 <nil>]", 0},
		{"spaces around numbers", nil, `a, 7 ,1.5`, "[a 7 150]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := newCSVFormat(tc.opts, "csv.", csvFields)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]any, len(csvFields))
			nulls, err := f.decode([]byte(tc.in), dst)
			got := fmt.Sprint(dst)
			switch {
			case errors.Is(err, errSkip):
				got = "skip"
			case err != nil:
				got = err.Error()
			}
			if got != tc.want || nulls != tc.nulls {
				t.Errorf("decode %q: %s (%d nulled), want %s (%d)", tc.in, got, nulls, tc.want, tc.nulls)
			}
		})
	}
}

func TestCSVEncodeText(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		in   string
		want string
	}{
		{nil, "plain", "plain"},
		{nil, "", ""},
		{nil, "a b", `"a b"`},
		{nil, `say "hi"`, `"say ""hi"""`},
		{nil, "2024-01-01", "2024-01-01"},
		{nil, "line\nfeed", "\"line\nfeed\""},
		{map[string]string{"csv.field-delimiter": ";"}, "12:30", `"12:30"`},
		{map[string]string{"csv.disable-quote-character": "true"}, "a,b", "a,b"},
		{map[string]string{"csv.escape-character": "~"}, "a~b", `"a~~b"`},
		{nil, "abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"},     // 24: checked, safe
		{nil, "abcdefghijklmnopqrstuvwxy", `"abcdefghijklmnopqrstuvwxy"`}, // 25: quoted unchecked
	} {
		f, err := newCSVFormat(tc.opts, "csv.", csvFields[:1])
		if err != nil {
			t.Fatal(err)
		}
		if got := string(f.encode(nil, []any{tc.in}, []int{0})); got != tc.want {
			t.Errorf("%v: encode %q = %s, want %s", tc.opts, tc.in, got, tc.want)
		}
	}
}

func TestCSVNumbers(t *testing.T) {
	for _, tc := range []struct {
		unscaled int64
		scale    int
		sci      bool
		want     string
	}{
		{1250, 2, true, "12.5"}, {10000, 2, true, "1E+2"}, {10000, 2, false, "100"}, {0, 2, true, "0"},
		{-5, 2, true, "-0.05"}, {123000, 0, true, "1.23E+5"}, {123000, 0, false, "123000"}, {1, 9, true, "1E-9"},
		{1, 9, false, "0.000000001"}, {-1200, 1, true, "-1.2E+2"},
	} {
		if got := formatDecimalCSV(tc.unscaled, tc.scale, tc.sci); got != tc.want {
			t.Errorf("formatDecimalCSV(%d, %d, %v) = %s, want %s", tc.unscaled, tc.scale, tc.sci, got, tc.want)
		}
	}
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{1.1, 32, "1.1"}, {float64(float32(0.1)), 32, "0.1"}, {1e10, 32, "1.0E10"}, {1e-5, 32, "1.0E-5"},
		{3.4028234663852886e38, 32, "3.4028235E38"}, {0.1, 64, "0.1"}, {1e7, 64, "1.0E7"}, {100, 64, "100.0"},
	} {
		if got := types.FormatFloatJava(tc.f, tc.bits); got != tc.want {
			t.Errorf("FormatFloatJava(%v, %d) = %s, want %s", tc.f, tc.bits, got, tc.want)
		}
	}
}

func TestPartitionEscaping(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "b/c": "b%2Fc", "k=v": "k%3Dv", "50%": "50%25", "x:y": "x%3Ay", "é": "é", "a b": "a b"} {
		got := escapePartition(in)
		if got != want {
			t.Errorf("escapePartition(%q) = %q, want %q", in, got, want)
		}
		if back := unescapePartition(got); back != in {
			t.Errorf("unescapePartition(%q) = %q, want %q", got, back, in)
		}
	}
}
