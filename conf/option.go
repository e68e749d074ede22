package conf

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Option declares one configuration key: its name, the type of its value,
// its default and its documentation. Options are immutable values: the With
// methods return a modified copy, so a declared option never changes.
//
// Declare options with the constructors String, Int, Bool, Float, Duration,
// Memory, Enum and StringList, and read them with Get or Lookup.
type Option[T any] struct {
	key         string
	def         T
	defaultDoc  string
	description string
	deprecated  []string
	fallback    []string // other options' keys, read when this one is not set
	typeName    string   // for documentation: "Integer", "Duration", ...
	noun        string   // for messages: "integer", "duration", ...
	parse       func(string) (T, string)
	format      func(T) string
	clone       func(T) T
	checks      []func(T) error
	enumValues  []string
	listSep     byte // non-zero for list options
}

// Key returns the option's key, e.g. "parallelism.default".
func (o Option[T]) Key() string { return o.key }

// Default returns the value used when the key is not set.
func (o Option[T]) Default() T {
	if o.clone != nil {
		return o.clone(o.def)
	}
	return o.def
}

// DefaultString documents the default: the formatted default value, or a
// sentence where the default depends on other settings.
func (o Option[T]) DefaultString() string {
	if o.defaultDoc != "" {
		return o.defaultDoc
	}
	return o.Format(o.def)
}

// Description documents what the option does.
func (o Option[T]) Description() string { return o.description }

// DeprecatedKeys returns older names that are still accepted for this option.
func (o Option[T]) DeprecatedKeys() []string { return slices.Clone(o.deprecated) }

// FallbackKeys returns the keys whose value the option takes, the first
// that is set, when neither its key nor a deprecated one is.
func (o Option[T]) FallbackKeys() []string { return slices.Clone(o.fallback) }

// TypeName names the value type for documentation: "Integer", "Duration", ...
func (o Option[T]) TypeName() string { return o.typeName }

// EnumValues returns the accepted values of an enum option, nil otherwise.
func (o Option[T]) EnumValues() []string { return slices.Clone(o.enumValues) }

// Parse reads s as a value of this option, applying the option's checks.
func (o Option[T]) Parse(s string) (T, error) {
	if o.parse == nil {
		var zero T
		return zero, &ValueError{Type: "value", Value: s, Reason: "the option was not declared with a constructor of package conf"}
	}
	v, reason := o.parse(s)
	if reason != "" {
		var zero T
		return zero, &ValueError{Type: o.noun, Value: s, Reason: reason}
	}
	for _, check := range o.checks {
		if err := check(v); err != nil {
			var zero T
			return zero, &ValueError{Type: "value", Value: s, Reason: err.Error()}
		}
	}
	return v, nil
}

// Format writes v in the form Parse reads.
func (o Option[T]) Format(v T) string {
	if o.format == nil {
		return fmt.Sprint(v)
	}
	return o.format(v)
}

// WithDeprecatedKeys returns a copy of o that also accepts the given older
// key names. A value set under an old name is reported by Validate with a
// warning naming the new one.
func (o Option[T]) WithDeprecatedKeys(keys ...string) Option[T] {
	o.deprecated = append(slices.Clone(o.deprecated), keys...)
	return o
}

// WithFallbackKeys returns a copy of o that, when neither its key nor a
// deprecated one is set, takes the value of the first of keys that is, as
// Flink's fallback keys do. Unlike a deprecated key, each is an option of
// its own, declared with the same type, and may be the fallback of several
// options: security.ssl.keystore is that of both
// security.ssl.internal.keystore and security.ssl.rest.keystore.
func (o Option[T]) WithFallbackKeys(keys ...string) Option[T] {
	o.fallback = append(slices.Clone(o.fallback), keys...)
	return o
}

// WithCheck returns a copy of o whose values must also pass check.
// The error's text is shown to the user as the reason.
func (o Option[T]) WithCheck(check func(T) error) Option[T] {
	o.checks = append(slices.Clone(o.checks), check)
	return o
}

// WithDefaultDoc returns a copy of o whose default is documented by doc
// instead of by the formatted default value. Use it where the default is
// "not set" or depends on other settings.
func (o Option[T]) WithDefaultDoc(doc string) Option[T] {
	o.defaultDoc = doc
	return o
}

// parseValue reads a stored value, which is either one string or, for a
// value written as a YAML sequence, a list of items.
func (o Option[T]) parseValue(v value) (T, error) {
	if v.items == nil {
		return o.Parse(v.text)
	}
	if o.listSep == 0 {
		var zero T
		return zero, &ValueError{Type: o.noun, Value: v.text,
			Reason: "expects a single value, not a list"}
	}
	return o.Parse(FormatList(v.items, o.listSep))
}

func (o Option[T]) checkValue(v value) error {
	_, err := o.parseValue(v)
	return err
}

func (o Option[T]) separator() byte { return o.listSep }

// AnyOption is the part of an Option that does not depend on its value type;
// it lets options of different types be listed together, as Catalog does.
type AnyOption interface {
	Key() string
	DeprecatedKeys() []string
	FallbackKeys() []string
	Description() string
	DefaultString() string
	TypeName() string
	EnumValues() []string

	checkValue(value) error
	separator() byte
}

var (
	_ AnyOption = Option[int]{}
	_ AnyOption = Option[[]string]{}
)

func newOption[T any](key string, def T, description, typeName, noun string,
	parse func(string) (T, string), format func(T) string) Option[T] {
	return Option[T]{key: key, def: def, description: description, typeName: typeName, noun: noun, parse: parse, format: format}
}

// String declares an option whose value is any string.
func String(key, def, description string) Option[string] {
	return newOption(key, def, description, "String", "string",
		func(s string) (string, string) { return s, "" },
		func(s string) string { return s })
}

// Int declares an option whose value is a whole number.
func Int(key string, def int, description string) Option[int] {
	return newOption(key, def, description, "Integer", "integer", parseInt, strconv.Itoa)
}

// Bool declares an option whose value is true or false (case-insensitive).
func Bool(key string, def bool, description string) Option[bool] {
	return newOption(key, def, description, "Boolean", "boolean", parseBool, strconv.FormatBool)
}

// Float declares an option whose value is a finite number.
func Float(key string, def float64, description string) Option[float64] {
	return newOption(key, def, description, "Double", "number", parseFloat, formatFloat)
}

// Duration declares an option whose value is a non-negative duration, written
// as ParseDuration reads it ("10 s", "500 ms", "1 min"; a bare number is ms).
func Duration(key string, def time.Duration, description string) Option[time.Duration] {
	return newOption(key, def, description, "Duration", "duration", parseDuration, FormatDuration)
}

// Memory declares an option whose value is a memory size, written as
// ParseMemorySize reads it ("1728m", "1 gb", "64kb"; a bare number is bytes).
func Memory(key string, def MemorySize, description string) Option[MemorySize] {
	return newOption(key, def, description, "MemorySize", "memory size", parseMemorySize, MemorySize.String)
}

// Enum declares an option whose value is one of values, matched
// case-insensitively; Get returns the spelling given in values.
func Enum(key, def string, values []string, description string) Option[string] {
	return enumWithAliases(key, def, values, nil, description)
}

// enumWithAliases is Enum where aliases maps extra accepted spellings
// (lower case) to a value in values.
func enumWithAliases(key, def string, values []string, aliases map[string]string, description string) Option[string] {
	values = slices.Clone(values)
	parse := func(s string) (string, string) {
		t := strings.TrimSpace(s)
		for _, v := range values {
			if strings.EqualFold(t, v) {
				return v, ""
			}
		}
		if v, ok := aliases[strings.ToLower(t)]; ok {
			return v, ""
		}
		return "", "must be one of " + strings.Join(values, ", ")
	}
	o := newOption(key, def, description, "Enum", "value", parse, func(s string) string { return s })
	o.enumValues = values
	return o
}

// StringList declares an option whose value is a list of strings: a YAML
// sequence in config.yaml, or items separated by ';' on one line (see
// ParseList).
func StringList(key string, def []string, description string) Option[[]string] {
	return stringList(key, ';', def, description)
}

func stringList(key string, sep byte, def []string, description string) Option[[]string] {
	o := newOption(key, slices.Clone(def), description, "List<String>", "list",
		func(s string) ([]string, string) { return parseList(s, sep) },
		func(items []string) string { return FormatList(items, sep) })
	o.clone = slices.Clone[[]string]
	o.listSep = sep
	return o
}

// ---------------------------------------------------------------------------
// Checks

// AtLeast returns a check that values are at least min.
func AtLeast[T cmp.Ordered](min T) func(T) error {
	return func(v T) error {
		if v < min {
			return fmt.Errorf("must be at least %v", min)
		}
		return nil
	}
}

// Between returns a check that values lie in [min, max].
func Between[T cmp.Ordered](min, max T) func(T) error {
	return func(v T) error {
		if v < min || v > max {
			return fmt.Errorf("must be between %v and %v", min, max)
		}
		return nil
	}
}

// portCheck accepts 0 (any free port) to 65535.
var portCheck = Between(0, 65535)

// checkPortRange accepts Flink's port specifications: a port, a range
// "50100-50200", or a comma-separated list of both; 0 means any free port.
func checkPortRange(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, reason := parseInt(lo)
		if reason == "" && portCheck(a) != nil {
			reason = "out of range"
		}
		b := a
		if isRange && reason == "" {
			b, reason = parseInt(hi)
			if reason == "" && (portCheck(b) != nil || b < a) {
				reason = "out of range"
			}
		}
		if reason != "" {
			return fmt.Errorf("%q is not a port (0-65535) or a range such as 50100-50200", strings.TrimSpace(part))
		}
	}
	return nil
}
