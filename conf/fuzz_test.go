package conf

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"10 s", "10s", "1 min", "2 h", "500 ms", "100", "1h30m", "-5s", "1.5 s", "9223372036854775807 d", "7 µs", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("ParseDuration(FormatDuration(%v) = %q) = %v, %v", d, FormatDuration(d), back, err)
		}
	})
}

func FuzzParseMemorySize(f *testing.F) {
	for _, s := range []string{"1024m", "1g", "512 mb", "1 gb", "64kb", "100", "1.5g", "-1", "9223372036854775807 t", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMemorySize(s)
		if err != nil {
			return
		}
		if m < 0 {
			t.Fatalf("ParseMemorySize(%q) = %d, negative", s, m)
		}
		back, err := ParseMemorySize(m.String())
		if err != nil || back != m {
			t.Fatalf("ParseMemorySize(%q) = %v, %v; want %d", m.String(), back, err, m)
		}
	})
}

func FuzzList(f *testing.F) {
	for _, s := range []string{"a;b", `"a;b";c`, `'x''y'`, "[a, b]", `"open`, ";;", "a, b"} {
		f.Add(s, byte(';'))
	}
	f.Add("a,b", byte(','))
	f.Fuzz(func(t *testing.T, s string, sep byte) {
		if sep == '"' || sep == '\'' || sep == ' ' || sep == '\t' {
			return // not a separator any option uses
		}
		items, err := ParseList(s, sep)
		if err != nil {
			return
		}
		back, err := ParseList(FormatList(items, sep), sep)
		if err != nil || !slices.Equal(back, items) && len(back)+len(items) > 0 {
			t.Fatalf("ParseList(%q) = %q; FormatList = %q; parses back to %q, %v", s, items, FormatList(items, sep), back, err)
		}
	})
}

func FuzzParseDynamicProperty(f *testing.F) {
	for _, s := range []string{"a=b", "-Da=b", "=b", "a", " a = b ", "a==b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, _, err := ParseDynamicProperty(s)
		if err == nil && (k == "" || strings.ContainsAny(k, " \t\r\n")) {
			t.Fatalf("ParseDynamicProperty(%q) accepted key %q", s, k)
		}
	})
}

// FuzzParseYAML checks that no file makes the reader or Validate panic, and
// that whatever is read survives shipping with ToMap and FromMap.
func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		"parallelism.default: 4\n",
		"execution:\n  checkpointing:\n    interval: 10 s\n",
		"yarn.ship-files: [a, b]\nyarn.tags: [x]\n",
		"a: &a {b: *a}\n",
		"a: &x [1]\nb: *x\n<<: {c: 1}\n",
		"- 1\n",
		"a: 1\n---\nb: 2\n",
		"k:\n",
		"? [a]\n: b\n",
		"state.checkpoints.dir: x\nexecution.checkpointing.dir: y\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseYAML("config.yaml", data)
		if err != nil {
			return
		}
		_, _ = c.Validate()
		for _, o := range Catalog() {
			_ = IsSet(c, o)
		}
		_ = Get(c, YarnShipFiles)
		_ = Get(c, CheckpointingInterval)
		m := c.ToMap()
		back := FromMap(m, Source{Name: "shipped"})
		if !maps.Equal(back.ToMap(), m) {
			t.Fatalf("ToMap/FromMap round trip changed %v into %v", m, back.ToMap())
		}
		if got, want := Get(back, YarnShipFiles), Get(c, YarnShipFiles); !slices.Equal(got, want) {
			t.Fatalf("yarn.ship-files changed in shipping: %q -> %q", want, got)
		}
	})
}
