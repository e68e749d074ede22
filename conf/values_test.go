package conf

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"10 s", 10 * time.Second, false},
		{"10s", 10 * time.Second, false},
		{"10 S", 10 * time.Second, false},
		{"  10 sec ", 10 * time.Second, false},
		{"10 seconds", 10 * time.Second, false},
		{"1 min", time.Minute, false},
		{"1min", time.Minute, false},
		{"5 m", 5 * time.Minute, false},
		{"2 minutes", 2 * time.Minute, false},
		{"2 h", 2 * time.Hour, false},
		{"3 hours", 3 * time.Hour, false},
		{"1 d", 24 * time.Hour, false},
		{"2 days", 48 * time.Hour, false},
		{"500 ms", 500 * time.Millisecond, false},
		{"500 millis", 500 * time.Millisecond, false},
		{"100", 100 * time.Millisecond, false},
		{"0", 0, false},
		{"7 us", 7 * time.Microsecond, false},
		{"7 µs", 7 * time.Microsecond, false},
		{"9 ns", 9 * time.Nanosecond, false},
		{"1h30m", 90 * time.Minute, false}, // Go syntax
		{"1.5s", 1500 * time.Millisecond, false},
		{"", 0, true},
		{"   ", 0, true},
		{"ten seconds", 0, true},
		{"10 sec0", 0, true},
		{"10 lightyears", 0, true},
		{"-5 s", 0, true},
		{"-5s", 0, true},
		{"1.5 s", 0, true},
		{"99999999999999999999 s", 0, true},
		{"9223372036854775807 d", 0, true},
		{"s", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if tt.wantErr {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want a *ValueError", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0 ms"},
		{10 * time.Second, "10 s"},
		{90 * time.Second, "90 s"},
		{time.Minute, "1 min"},
		{2 * time.Hour, "2 h"},
		{48 * time.Hour, "2 d"},
		{1500 * time.Millisecond, "1500 ms"},
		{7 * time.Microsecond, "7 us"},
		{3, "3 ns"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseDuration(FormatDuration(tt.in)); err != nil || back != tt.in {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", tt.in, back, err)
		}
	}
}

func TestParseMemorySize(t *testing.T) {
	tests := []struct {
		in      string
		want    MemorySize
		wantErr bool
	}{
		{"1024m", 1024 * MiB, false},
		{"1g", GiB, false},
		{"1G", GiB, false},
		{"512 mb", 512 * MiB, false},
		{"1 gb", GiB, false},
		{"64kb", 64 * KiB, false},
		{"64 KB", 64 * KiB, false},
		{"2 t", 2 * TiB, false},
		{"3 tb", 3 * TiB, false},
		{"100", 100, false},
		{"100 b", 100, false},
		{"100 bytes", 100, false},
		{"1 mebibytes", MiB, false},
		{"0", 0, false},
		{"", 0, true},
		{"1.5g", 0, true},
		{"-1m", 0, true},
		{"lots", 0, true},
		{"1 pb", 0, true},
		{"9223372036854775807 kb", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMemorySize(tt.in)
			if tt.wantErr {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("ParseMemorySize(%q) = %v, %v; want a *ValueError", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseMemorySize(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestMemorySizeString(t *testing.T) {
	tests := []struct {
		in   MemorySize
		want string
	}{
		{0, "0 bytes"},
		{100, "100 bytes"},
		{64 * KiB, "64 kb"},
		{1728 * MiB, "1728 mb"},
		{GiB, "1 gb"},
		{2 * TiB, "2 tb"},
		{GiB + 1, "1073741825 bytes"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("MemorySize(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		if back, err := ParseMemorySize(tt.in.String()); err != nil || back != tt.in {
			t.Errorf("ParseMemorySize(%q) = %v, %v", tt.in.String(), back, err)
		}
	}
}

func TestScalarOptions(t *testing.T) {
	b := Bool("b", false, "")
	i := Int("i", 0, "").WithCheck(Between(1, 10))
	f := Float("f", 0, "")
	e := Enum("e", "A_B", []string{"A_B", "C"}, "")
	r := RestartStrategyType

	tests := []struct {
		name    string
		parse   func() (any, error)
		want    any
		wantErr bool
	}{
		{"bool true", func() (any, error) { return b.Parse("true") }, true, false},
		{"bool TRUE", func() (any, error) { return b.Parse("TRUE") }, true, false},
		{"bool False", func() (any, error) { return b.Parse(" False ") }, false, false},
		{"bool yes", func() (any, error) { return b.Parse("yes") }, nil, true},
		{"bool 1", func() (any, error) { return b.Parse("1") }, nil, true},
		{"int", func() (any, error) { return i.Parse(" 7 ") }, 7, false},
		{"int below range", func() (any, error) { return i.Parse("0") }, nil, true},
		{"int above range", func() (any, error) { return i.Parse("11") }, nil, true},
		{"int word", func() (any, error) { return i.Parse("seven") }, nil, true},
		{"int fraction", func() (any, error) { return i.Parse("7.5") }, nil, true},
		{"int overflow", func() (any, error) { return i.Parse("99999999999999999999") }, nil, true},
		{"float", func() (any, error) { return f.Parse("1.5") }, 1.5, false},
		{"float exp", func() (any, error) { return f.Parse("2e3") }, 2000.0, false},
		{"float NaN", func() (any, error) { return f.Parse("NaN") }, nil, true},
		{"float Inf", func() (any, error) { return f.Parse("+Inf") }, nil, true},
		{"enum exact", func() (any, error) { return e.Parse("A_B") }, "A_B", false},
		{"enum case", func() (any, error) { return e.Parse("a_b") }, "A_B", false},
		{"enum unknown", func() (any, error) { return e.Parse("D") }, nil, true},
		{"enum alias", func() (any, error) { return r.Parse("FixedDelay") }, RestartFixedDelay, false},
		{"enum alias off", func() (any, error) { return r.Parse("off") }, RestartNone, false},
		{"enum canonical", func() (any, error) { return r.Parse("Exponential-Delay") }, RestartExponentialDelay, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse()
			if tt.wantErr {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("got %v, %v; want a *ValueError", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	tests := []struct {
		in      string
		sep     byte
		want    []string
		wantErr bool
	}{
		{"", ';', nil, false},
		{"a", ';', []string{"a"}, false},
		{"a;b; c ", ';', []string{"a", "b", "c"}, false},
		{"a;;b;", ';', []string{"a", "b"}, false},
		{"a,b", ';', []string{"a,b"}, false},
		{"a,b", ',', []string{"a", "b"}, false},
		{`"a;b";c`, ';', []string{"a;b", "c"}, false},
		{`'x''y';z`, ';', []string{"x'y", "z"}, false},
		{`"say ""hi"""`, ';', []string{`say "hi"`}, false},
		{`it's;fine`, ';', []string{"it's", "fine"}, false},
		{`""`, ';', []string{""}, false},
		{"[a, b, 'c d']", ';', []string{"a", "b", "c d"}, false},
		{"[]", ';', nil, false},
		{`"open`, ';', nil, true},
		{`"a" b;c`, ';', nil, true},
		{"[a, [b]]", ';', nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseList(tt.in, tt.sep)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseList(%q) = %q; want an error", tt.in, got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ParseList(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatListRoundTrip(t *testing.T) {
	for _, items := range [][]string{
		nil,
		{"a"},
		{"a", "b"},
		{"a;b", `"q"`, "'s'", " padded ", ""},
		{"[x]", "y"},
		{"hdfs:///sluice/lib", "hdfs:///shared/lib"},
	} {
		for _, sep := range []byte{';', ','} {
			s := FormatList(items, sep)
			got, err := ParseList(s, sep)
			if err != nil || !slices.Equal(got, items) && !(len(got) == 0 && len(items) == 0) {
				t.Errorf("ParseList(FormatList(%q, %q) = %q) = %q, %v", items, sep, s, got, err)
			}
		}
	}
}
