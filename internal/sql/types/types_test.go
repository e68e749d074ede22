package types_test

import (
	"errors"
	"testing"

	"github.com/sluice/sluice/internal/sql/types"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{types.FormatTimestampSQL(1704103200000), "2024-01-01 10:00:00"},
		{types.FormatTimestampSQL(1704103200500), "2024-01-01 10:00:00.5"},
		{types.FormatTimestampSQL(1704103200123), "2024-01-01 10:00:00.123"},
		{types.FormatTimestampSQL(-1), "1969-12-31 23:59:59.999"},
		{types.FormatTimestampISO(1704103200010), "2024-01-01T10:00:00.01"},
		{types.FormatTimestampCast(1704103200000, 3), "2024-01-01 10:00:00.000"},
		{types.FormatDecimal(1275, 2), "12.75"},
		{types.FormatDecimal(-5, 2), "-0.05"},
		{types.FormatDecimal(700, 2), "7.00"},
		{types.FormatDecimalJava(0, 10), "0E-10"},
		{types.FormatDecimalJava(1, 8), "1E-8"},
		{types.FormatDecimalJava(123, 8), "0.00000123"},
		// Flink's json format, as Flink 2.3 writes these (Jackson normalizes
		// the BigDecimal: integration/flinksql compares with Flink itself).
		{types.FormatDecimalJSON(700, 2, false), "7"},
		{types.FormatDecimalJSON(550, 2, false), "5.5"},
		{types.FormatDecimalJSON(1000, 2, false), "1E+1"},
		{types.FormatDecimalJSON(150000, 2, false), "1.5E+3"},
		{types.FormatDecimalJSON(0, 6, false), "0"},
		{types.FormatDecimalJSON(-1275, 2, false), "-12.75"},
		{types.FormatDecimalJSON(-2000, 2, false), "-2E+1"},
		{types.FormatDecimalJSON(102240000, 6, false), "102.24"},
		{types.FormatDecimalJSON(1, 8, false), "1E-8"},
		{types.FormatDecimalJSON(1000, 2, true), "10.00"},
		{types.FormatDecimalJSON(150000, 2, true), "1500.00"},
		{types.FormatDecimalJSON(550, 2, true), "5.50"},
		{types.FormatDecimalJSON(0, 2, true), "0.00"},
		{types.FormatDecimalJSON(1, 8, true), "0.00000001"},
		{types.FormatDoubleJava(1), "1.0"},
		{types.FormatDoubleJava(12.5), "12.5"},
		{types.FormatDoubleJava(1e10), "1.0E10"},
		{types.FormatDoubleJava(1.5e-5), "1.5E-5"},
		{types.FormatDoubleJava(0.001), "0.001"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		iso  bool
		want int64
		ok   bool
	}{
		{"2024-01-01 10:00:00", false, 1704103200000, true},
		{"2024-01-01 10:00", false, 1704103200000, true},
		{"2024-01-01 10:00:00.123456", false, 1704103200123, true},
		{"2024-01-01T10:00:00", true, 1704103200000, true},
		{"2024-01-01T10:00:00", false, 0, false}, // SQL standard: a space, as Flink
		{"2024-02-30 10:00:00", false, 0, false},
		{"yesterday", false, 0, false},
	} {
		got, err := types.ParseTimestamp(tc.in, tc.iso)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseTimestamp(%q, %v) = %d, %v", tc.in, tc.iso, got, err)
		}
		if err != nil && !errors.Is(err, types.ErrCast) {
			t.Errorf("%q: %v does not wrap ErrCast", tc.in, err)
		}
	}
}

func TestDecimalArithmetic(t *testing.T) {
	if v, _ := types.Rescale(1255, 3, 2); v != 126 {
		t.Errorf("1.255 at scale 2 = %d, want 126 (HALF_UP)", v)
	}
	if v, _ := types.Rescale(-1255, 3, 2); v != -126 {
		t.Errorf("-1.255 at scale 2 = %d, want -126", v)
	}
	if _, err := types.Rescale(1<<62, 0, 2); !errors.Is(err, types.ErrOverflow) {
		t.Errorf("rescale overflow: %v", err)
	}
	if v, _ := types.DivDecimal(1000, 2, 3, 0, 6); v != 3333333 {
		t.Errorf("10.00 / 3 = %d, want 3333333 at scale 6", v)
	}
	if v, _ := types.MulDecimal(150, 2, 3, 0, 2); v != 450 {
		t.Errorf("1.50 * 3 = %d", v)
	}
	if _, err := types.AddInt64(1<<62, 1<<62); !errors.Is(err, types.ErrOverflow) {
		t.Errorf("add overflow: %v", err)
	}
	if v, err := types.ParseDecimal("12.345", 5, 2); err != nil || v != 1235 {
		t.Errorf("ParseDecimal = %d, %v", v, err)
	}
	if _, err := types.ParseDecimal("1234.5", 4, 2); !errors.Is(err, types.ErrOverflow) {
		t.Errorf("precision overflow: %v", err)
	}
}

func TestCast(t *testing.T) {
	dec := types.DecimalOf(18, 2)
	for _, tc := range []struct {
		v        any
		from, to types.Type
		want     any
		wantErr  bool
	}{
		{int64(3), types.INT, dec, int64(300), false},
		{int64(12345), types.DecimalOf(38, 2), types.DecimalOf(4, 2), nil, false}, // overflow: NULL
		{"42", types.STRING, types.INT, int64(42), false},
		{"x", types.STRING, types.INT, nil, true},
		{int64(1275), dec, types.STRING, "12.75", false},
		{int64(1275), dec, types.DOUBLE, 12.75, false},
		{3.7, types.DOUBLE, types.INT, int64(3), false},
		{int64(300), types.INT, types.Type{Kind: types.TinyInt}, int64(44), false}, // wraps, as Java
		{"2024-01-01 10:00:00", types.STRING, types.TimestampOf(3), int64(1704103200000), false},
		{true, types.BOOLEAN, types.STRING, "TRUE", false},
	} {
		got, err := types.Cast(tc.v, tc.from, tc.to)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("CAST(%v AS %s) from %s = %v, %v; want %v", tc.v, tc.to, tc.from, got, err, tc.want)
		}
	}
}
