package conf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ValueError reports a value that cannot be read as the type an option
// expects, or that is outside the option's allowed range.
type ValueError struct {
	Type   string // what was expected: "duration", "memory size", "integer", ...
	Value  string // the value as written
	Reason string // what is wrong, with a hint at the accepted form
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Type, e.Value, e.Reason)
}

// ---------------------------------------------------------------------------
// Durations

// durationUnits are the unit names Flink accepts (TimeUtils), plus "us".
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"µs": time.Microsecond, "us": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

const durationHint = `use a whole number and a unit, e.g. "500 ms", "10 s", "1 min", "2 h", "1 d"; a bare number means milliseconds`

// ParseDuration reads a duration the way Flink does: a non-negative whole
// number followed by an optional unit (ns, us/µs, ms, s, m/min, h, d and
// their long forms such as "sec", "minutes", "days"), with or without a
// space in between, units case-insensitive. A bare number is milliseconds:
// "100" is 100 ms. As a convenience for Go users, Go's own syntax ("1h30m",
// "1.5s") is also accepted. Negative durations are rejected.
func ParseDuration(s string) (time.Duration, error) {
	d, reason := parseDuration(s)
	if reason != "" {
		return 0, &ValueError{Type: "duration", Value: s, Reason: reason}
	}
	return d, nil
}

func parseDuration(s string) (time.Duration, string) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, "empty; " + durationHint
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 {
		unit := strings.ToLower(strings.TrimSpace(t[i:]))
		mult := time.Millisecond
		if unit != "" {
			m, ok := durationUnits[unit]
			if !ok {
				if d, err := time.ParseDuration(t); err == nil {
					return d, ""
				}
				if strings.HasPrefix(unit, ".") {
					return 0, "fractions are not supported; use a smaller unit (e.g. \"1500 ms\")"
				}
				return 0, fmt.Sprintf("unknown unit %q; %s", unit, durationHint)
			}
			mult = m
		}
		n, err := strconv.ParseInt(t[:i], 10, 64)
		if err != nil || n > math.MaxInt64/int64(mult) {
			return 0, "too large (the maximum is about 292 years)"
		}
		return time.Duration(n) * mult, ""
	}
	if d, err := time.ParseDuration(t); err == nil {
		if d < 0 {
			return 0, "must not be negative"
		}
		return d, ""
	}
	if strings.HasPrefix(t, "-") {
		return 0, "must not be negative"
	}
	return 0, "does not start with a number; " + durationHint
}

// FormatDuration writes d in the form ParseDuration (and Flink) reads, using
// the largest unit that represents d exactly: "10 s", "1 min", "1500 ms".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0 ms"
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + " " + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + " ns"
}

// ---------------------------------------------------------------------------
// Memory sizes

// MemorySize is an amount of memory in bytes. Units are binary, as in Flink:
// 1 kb = 1024 bytes.
type MemorySize int64

// Memory size units.
const (
	Byte MemorySize = 1
	KiB             = 1024 * Byte
	MiB             = 1024 * KiB
	GiB             = 1024 * MiB
	TiB             = 1024 * GiB
)

// Bytes returns m as a number of bytes.
func (m MemorySize) Bytes() int64 { return int64(m) }

// String formats m in the form ParseMemorySize reads, using the largest unit
// that represents m exactly: "1 gb", "1536 mb", "100 bytes".
func (m MemorySize) String() string {
	if m != 0 {
		for _, u := range []struct {
			name string
			m    MemorySize
		}{{"tb", TiB}, {"gb", GiB}, {"mb", MiB}, {"kb", KiB}} {
			if m%u.m == 0 {
				return strconv.FormatInt(int64(m/u.m), 10) + " " + u.name
			}
		}
	}
	return strconv.FormatInt(int64(m), 10) + " bytes"
}

var memoryUnits = map[string]MemorySize{
	"": Byte, "b": Byte, "bytes": Byte,
	"k": KiB, "kb": KiB, "kibibytes": KiB,
	"m": MiB, "mb": MiB, "mebibytes": MiB,
	"g": GiB, "gb": GiB, "gibibytes": GiB,
	"t": TiB, "tb": TiB, "tebibytes": TiB,
}

const memoryHint = `use a whole number and a unit, e.g. "512 mb", "1g", "64kb"; a bare number means bytes`

// ParseMemorySize reads a memory size the way Flink does (MemorySize.parse):
// a non-negative whole number followed by an optional unit, b/bytes,
// k/kb/kibibytes, m/mb/mebibytes, g/gb/gibibytes or t/tb/tebibytes, with or
// without a space, case-insensitive. A bare number is bytes.
func ParseMemorySize(s string) (MemorySize, error) {
	m, reason := parseMemorySize(s)
	if reason != "" {
		return 0, &ValueError{Type: "memory size", Value: s, Reason: reason}
	}
	return m, nil
}

func parseMemorySize(s string) (MemorySize, string) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, "empty; " + memoryHint
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		if strings.HasPrefix(t, "-") {
			return 0, "must not be negative"
		}
		return 0, "does not start with a number; " + memoryHint
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := memoryUnits[unit]
	if !ok {
		if strings.HasPrefix(unit, ".") {
			return 0, "fractions are not supported; use a smaller unit (e.g. \"1536 mb\")"
		}
		return 0, fmt.Sprintf("unknown unit %q; %s", unit, memoryHint)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/int64(mult) {
		return 0, "too large"
	}
	return MemorySize(n) * mult, ""
}

// ---------------------------------------------------------------------------
// Scalars

func parseBool(s string) (bool, string) {
	switch t := strings.TrimSpace(s); {
	case strings.EqualFold(t, "true"):
		return true, ""
	case strings.EqualFold(t, "false"):
		return false, ""
	}
	return false, "use true or false"
}

func parseInt(s string) (int, string) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, "out of range"
		}
		return 0, "not a whole number"
	}
	if n != int64(int(n)) {
		return 0, "out of range"
	}
	return int(n), ""
}

func parseFloat(s string) (float64, string) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "not a finite number"
	}
	return f, ""
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ---------------------------------------------------------------------------
// Lists

// ParseList splits a list value written on one line, as Flink does for list
// options: items separated by sep (';' for most options), an item holding
// sep or starting with a quote wrapped in '"' or '\” with the quote doubled
// inside. Unquoted items are trimmed and empty ones dropped. A value in YAML
// flow form, "[a, b]", is read as a YAML sequence.
func ParseList(s string, sep byte) ([]string, error) {
	items, reason := parseList(s, sep)
	if reason != "" {
		return nil, &ValueError{Type: "list", Value: s, Reason: reason}
	}
	return items, nil
}

func parseList(s string, sep byte) ([]string, string) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		var items []string
		if err := yaml.Unmarshal([]byte(t), &items); err != nil {
			return nil, "not a list of plain values in [a, b] form"
		}
		return items, ""
	}
	var items []string
	i := 0
	for i <= len(t) {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i < len(t) && (t[i] == '"' || t[i] == '\'') {
			q := t[i]
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(t) {
					return nil, fmt.Sprintf("unterminated quote %c", q)
				}
				if t[j] == q {
					if j+1 < len(t) && t[j+1] == q {
						b.WriteByte(q)
						j += 2
						continue
					}
					j++
					break
				}
				b.WriteByte(t[j])
				j++
			}
			for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
				j++
			}
			if j < len(t) && t[j] != sep {
				return nil, fmt.Sprintf("unexpected text after quoted item at offset %d", j)
			}
			items = append(items, b.String())
			i = j + 1
			continue
		}
		end := strings.IndexByte(t[i:], sep)
		if end < 0 {
			end = len(t) - i
		}
		if item := strings.TrimSpace(t[i : i+end]); item != "" {
			items = append(items, item)
		}
		i += end + 1
	}
	return items, ""
}

// FormatList joins items with sep so that ParseList returns them unchanged.
func FormatList(items []string, sep byte) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte(sep)
		}
		if it == "" || strings.IndexByte(it, sep) >= 0 || strings.TrimSpace(it) != it ||
			it[0] == '"' || it[0] == '\'' || (i == 0 && strings.HasPrefix(it, "[")) {
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(it, `"`, `""`))
			b.WriteByte('"')
			continue
		}
		b.WriteString(it)
	}
	return b.String()
}
