package conf

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Source tells where a value was set, for messages.
type Source struct {
	Name string // a file path, SourceDynamic, SourceAPI, or a caller's own name
	Line int    // 1-based line in the file Name; 0 when not from a file
}

// Source names for values that do not come from a file.
const (
	SourceDynamic = "-D"  // a dynamic property on the command line
	SourceAPI     = "api" // set by program code with Set or With
)

func (s Source) String() string {
	if s.Line > 0 {
		return s.Name + ":" + strconv.Itoa(s.Line)
	}
	return s.Name
}

// value is a setting's value: one string, or the items of a YAML sequence.
type value struct {
	text  string   // the value as one string; lists joined with FormatList
	items []string // non-nil when the value was written as a YAML sequence
}

type entry struct {
	value
	as     string // the key as written, when it was a deprecated name
	source Source
}

// Entry is one setting of a Configuration.
type Entry struct {
	Key       string // the option's key; deprecated names are stored under the current one
	Value     string // the value as written; a YAML sequence is joined as FormatList does
	Source    Source // where it was set
	WrittenAs string // the deprecated key it was written as, or ""
}

// Configuration is a set of settings, key to value, each remembering where it
// was set. A Configuration is never modified once built: Set, With and Merge
// return a new one, so it is safe to share between goroutines.
//
// Unset keys read as their option's default. Values are kept as written and
// parsed when read; Validate reports every value that does not parse. The nil
// *Configuration is an empty configuration.
type Configuration struct {
	entries  map[string]entry
	problems []Problem // found while reading the settings; reported by Validate
}

// New returns an empty configuration.
func New() *Configuration { return &Configuration{} }

// FromMap returns a configuration holding m, every value attributed to src.
// It is the inverse of ToMap, for a process that receives its configuration
// from a client.
func FromMap(m map[string]string, src Source) *Configuration {
	c := &Configuration{entries: make(map[string]entry, len(m))}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		c.put(k, value{text: m[k]}, src)
	}
	return c
}

func (c *Configuration) clone() *Configuration {
	n := &Configuration{entries: make(map[string]entry)}
	if c != nil {
		maps.Copy(n.entries, c.entries)
		n.problems = slices.Clone(c.problems)
	}
	return n
}

// put stores v under key's current name, replacing any earlier value.
// REQUIRES: c was just built or cloned and is not yet shared.
func (c *Configuration) put(key string, v value, src Source) {
	if strings.TrimSpace(key) == "" {
		c.problems = append(c.problems, Problem{Key: key, Value: v.text, Source: src, Reason: "empty key"})
		return
	}
	e := entry{value: v, source: src}
	if canon, ok := canonicalKey(key); ok && canon != key {
		e.as = key
		key = canon
	}
	c.entries[key] = e
}

// Set returns a copy of c with key set to value. A deprecated key is stored
// under its current name.
func (c *Configuration) Set(key, value string) *Configuration {
	n := c.clone()
	n.put(key, valueOf(value), Source{Name: SourceAPI})
	return n
}

func valueOf(s string) value { return value{text: s} }

// With returns a copy of c with opt set to v.
func With[T any](c *Configuration, opt Option[T], v T) *Configuration {
	n := c.clone()
	n.put(opt.key, valueOf(opt.Format(v)), Source{Name: SourceAPI})
	return n
}

// Merge returns a copy of c with every setting of over added, replacing the
// same key in c. Reading problems of both are kept.
func (c *Configuration) Merge(over *Configuration) *Configuration {
	n := c.clone()
	if over != nil {
		maps.Copy(n.entries, over.entries)
		n.problems = append(n.problems, over.problems...)
	}
	return n
}

// Len returns the number of keys set.
func (c *Configuration) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Keys returns the keys that are set, sorted.
func (c *Configuration) Keys() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.entries))
}

// Entries returns every setting, sorted by key.
func (c *Configuration) Entries() []Entry {
	keys := c.Keys()
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.entries[k].export(k))
	}
	return out
}

func (e entry) export(key string) Entry {
	return Entry{Key: key, Value: e.text, Source: e.source, WrittenAs: e.as}
}

// Raw returns the setting of key as written, looking a deprecated key up
// under its current name.
func (c *Configuration) Raw(key string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	if canon, ok := canonicalKey(key); ok {
		key = canon
	}
	e, ok := c.entries[key]
	if !ok {
		return Entry{}, false
	}
	return e.export(key), true
}

// ToMap returns every setting as key to value, for shipping the configuration
// to another process, which rebuilds it with FromMap. Keys are the current
// names; use Keys for a deterministic order.
func (c *Configuration) ToMap() map[string]string {
	m := make(map[string]string, c.Len())
	if c != nil {
		for k, e := range c.entries {
			m[k] = e.text
		}
	}
	return m
}

// Subset returns the settings whose keys start with prefix, with the prefix
// removed: Subset("properties.") of {"properties.acks": "all"} is
// {"acks": "all"}. It serves the pass-through prefixes (see PassThroughPrefixes).
func (c *Configuration) Subset(prefix string) map[string]string {
	m := make(map[string]string)
	if c != nil {
		for k, e := range c.entries {
			if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
				m[rest] = e.text
			}
		}
	}
	return m
}

// find returns the entry set under key or, failing that, one of its deprecated keys.
func (c *Configuration) find(key string, deprecated []string) (entry, bool) {
	if c == nil {
		return entry{}, false
	}
	if e, ok := c.entries[key]; ok {
		return e, true
	}
	for _, d := range deprecated {
		if e, ok := c.entries[d]; ok {
			return e, true
		}
	}
	return entry{}, false
}

// findOption returns the entry that sets opt, under its key or a
// deprecated one or else under the first of its fallback keys that is set,
// and the key it was found under.
func (c *Configuration) findOption(opt AnyOption) (entry, string, bool) {
	if e, ok := c.find(opt.Key(), opt.DeprecatedKeys()); ok {
		return e, opt.Key(), true
	}
	for _, k := range opt.FallbackKeys() {
		if e, ok := c.find(k, nil); ok {
			return e, k, true
		}
	}
	return entry{}, "", false
}

// Lookup returns the value of opt in c and whether it is set (under its
// key, a deprecated one, or a fallback key). An unset option reads as its
// default. A value that does not parse reads as the default, with a
// *Problem (wrapping a *ValueError) telling what is wrong.
func Lookup[T any](c *Configuration, opt Option[T]) (v T, set bool, err error) {
	e, key, ok := c.findOption(opt)
	if !ok {
		return opt.Default(), false, nil
	}
	v, err = opt.parseValue(e.value)
	if err != nil {
		return opt.Default(), true, problemOf(key, e, err)
	}
	return v, true, nil
}

// KeyOf is the key the value of opt is read from in c: its own key, or the
// fallback key that sets it when its own does not. Messages about a value
// name it.
func KeyOf(c *Configuration, opt AnyOption) string {
	if _, key, ok := c.findOption(opt); ok {
		return key
	}
	return opt.Key()
}

// Get returns the value of opt in c, or its default when it is unset or its
// value does not parse. Validate reports values that do not parse.
func Get[T any](c *Configuration, opt Option[T]) T {
	v, _, _ := Lookup(c, opt)
	return v
}

// IsSet reports whether opt is set in c, under its key, a deprecated one
// or a fallback key.
func IsSet(c *Configuration, opt AnyOption) bool {
	_, _, ok := c.findOption(opt)
	return ok
}
