package conf

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrInvalid is matched by every *ValidationError.
	ErrInvalid = errors.New("conf: invalid configuration")
	// ErrSyntax is wrapped by errors for a config file that is not YAML.
	ErrSyntax = errors.New("conf: config file is not valid YAML")
)

// Problem is one bad setting: a value that does not parse or is out of
// range, a key set twice in one file, a malformed dynamic property, or a
// combination of settings that cannot work together.
type Problem struct {
	Key    string // the key as written; empty when the key itself is missing
	Value  string // the value as written
	Source Source // where it was set
	Reason string // what is wrong
	Err    error  // the underlying error, e.g. a *ValueError; may be nil
}

func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.Source.String())
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

func problemOf(key string, e entry, err error) *Problem {
	if e.as != "" {
		key = e.as
	}
	return &Problem{Key: key, Value: e.text, Source: e.source, Reason: err.Error(), Err: err}
}

// ValidationError lists every problem Validate found. It matches ErrInvalid.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "conf: " + e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "conf: %d problems in the configuration:", len(e.Problems))
	for i := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(e.Problems[i].Error())
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// WarningKind classifies a Warning.
type WarningKind int

const (
	// UnknownKey: no option has this key. Suggestion holds the nearest
	// known key, if one is close.
	UnknownKey WarningKind = iota + 1
	// DeprecatedKey: the key is an older name of an option. Suggestion holds
	// the current name.
	DeprecatedKey
)

// Warning is something Validate found suspicious but not fatal.
type Warning struct {
	Kind       WarningKind
	Key        string // the key as written
	Source     Source
	Suggestion string // a key to use instead; may be empty for UnknownKey
}

func (w Warning) String() string {
	switch w.Kind {
	case DeprecatedKey:
		return fmt.Sprintf("key %q (%s) is deprecated; use %q", w.Key, w.Source, w.Suggestion)
	default:
		s := fmt.Sprintf("unknown key %q (%s)", w.Key, w.Source)
		if w.Suggestion != "" {
			s += fmt.Sprintf("; did you mean %q?", w.Suggestion)
		}
		return s
	}
}

// passThroughPrefixes are key prefixes Sluice does not interpret itself but
// hands on to another system, so their keys are never reported as unknown:
//
//   - "properties." and "kafka.": Kafka client properties for connectors,
//     as in Flink's Kafka connector ("properties.bootstrap.servers").
//   - "metrics.reporter.": per-reporter settings, "metrics.reporter.<name>.<key>".
//   - "flink.hadoop." and "flink.yarn.": Hadoop and YARN client settings
//     that override core-site.xml, hdfs-site.xml and yarn-site.xml, as in Flink.
//   - "containerized.master.env." and "containerized.taskmanager.env.":
//     environment variables for the ApplicationMaster and TaskManager
//     containers, as in Flink.
var passThroughPrefixes = []string{
	"properties.",
	"kafka.",
	"metrics.reporter.",
	"flink.hadoop.",
	"flink.yarn.",
	"containerized.master.env.",
	"containerized.taskmanager.env.",
}

// PassThroughPrefixes returns the key prefixes whose keys are handed on to
// other systems (Kafka clients, metric reporters, Hadoop, container
// environments) and are never reported as unknown.
func PassThroughPrefixes() []string { return slices.Clone(passThroughPrefixes) }

// IsPassThrough reports whether key lies under a pass-through prefix.
func IsPassThrough(key string) bool {
	for _, p := range passThroughPrefixes {
		if len(key) > len(p) && strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Validate checks every setting of c against the catalog (and the extra
// options given, e.g. a connector's own) and reports all problems at once,
// as a *ValidationError listing each with its key, value, source and reason.
// Unknown keys outside the pass-through prefixes and deprecated keys are
// returned as warnings. Both are ordered as a reader meets them: file
// settings by file and line, then -D and others by key.
func (c *Configuration) Validate(extra ...AnyOption) (warnings []Warning, err error) {
	known := catalogIndex()
	if len(extra) > 0 {
		known = known.with(extra)
	}
	var problems []Problem
	if c != nil {
		problems = slices.Clone(c.problems)
	}
	for _, key := range c.Keys() {
		e := c.entries[key]
		written := key
		if e.as != "" {
			written = e.as
		}
		opt, current, ok := known.find(key)
		if !ok {
			if !IsPassThrough(key) {
				warnings = append(warnings, Warning{Kind: UnknownKey, Key: written, Source: e.source, Suggestion: known.suggest(key)})
			}
			continue
		}
		if written != current {
			warnings = append(warnings, Warning{Kind: DeprecatedKey, Key: written, Source: e.source, Suggestion: current})
		}
		if err := opt.checkValue(e.value); err != nil {
			problems = append(problems, *problemOf(key, e, err))
		}
	}
	problems = append(problems, crossCheck(c)...)
	slices.SortStableFunc(warnings, func(a, b Warning) int { return compareAt(a.Source, a.Key, b.Source, b.Key) })
	slices.SortStableFunc(problems, func(a, b Problem) int { return compareAt(a.Source, a.Key, b.Source, b.Key) })
	if len(problems) > 0 {
		return warnings, &ValidationError{Problems: problems}
	}
	return warnings, nil
}

// compareAt orders findings as a reader meets them: files first, in line
// order, then the other sources (-D, api) by name, each by key.
func compareAt(sa Source, ka string, sb Source, kb string) int {
	fileA, fileB := sa.Line > 0, sb.Line > 0
	if fileA != fileB {
		if fileA {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(sa.Name, sb.Name), cmp.Compare(sa.Line, sb.Line), cmp.Compare(ka, kb))
}

// crossCheck reports combinations of settings that cannot work together.
// Each check only runs when the values involved parse; their own problems
// are reported elsewhere.
func crossCheck(c *Configuration) []Problem {
	var out []Problem
	report := func(opt AnyOption, reason string) {
		e, _ := c.find(opt.Key(), opt.DeprecatedKeys())
		p := problemOf(opt.Key(), e, errors.New(reason))
		p.Err = nil
		out = append(out, *p)
	}

	interval, iSet, iErr := Lookup(c, HeartbeatInterval)
	timeout, tSet, tErr := Lookup(c, HeartbeatTimeout)
	if iErr == nil && tErr == nil && (iSet || tSet) && timeout <= interval {
		var at AnyOption = HeartbeatTimeout
		if !tSet {
			at = HeartbeatInterval
		}
		report(at, fmt.Sprintf("%s (%s) must be longer than %s (%s)",
			HeartbeatTimeout.Key(), FormatDuration(timeout), HeartbeatInterval.Key(), FormatDuration(interval)))
	}

	par, pSet, pErr := Lookup(c, ParallelismDefault)
	maxPar, mSet, mErr := Lookup(c, PipelineMaxParallelism)
	if pErr == nil && mErr == nil && mSet && maxPar > 0 && par > maxPar {
		var at AnyOption = PipelineMaxParallelism
		if pSet {
			at = ParallelismDefault
		}
		report(at, fmt.Sprintf("%s (%d) exceeds %s (%d)", ParallelismDefault.Key(), par, PipelineMaxParallelism.Key(), maxPar))
	}

	initial, inSet, inErr := Lookup(c, ExponentialDelayInitialBackoff)
	maxB, mbSet, mbErr := Lookup(c, ExponentialDelayMaxBackoff)
	if inErr == nil && mbErr == nil && (inSet || mbSet) && initial > maxB {
		var at AnyOption = ExponentialDelayMaxBackoff
		if !mbSet {
			at = ExponentialDelayInitialBackoff
		}
		report(at, fmt.Sprintf("%s (%s) exceeds %s (%s)", ExponentialDelayInitialBackoff.Key(), FormatDuration(initial),
			ExponentialDelayMaxBackoff.Key(), FormatDuration(maxB)))
	}

	if ha, _, err := Lookup(c, HighAvailabilityType); err == nil && ha != HighAvailabilityNone {
		if Get(c, HighAvailabilityStorageDir) == "" {
			report(HighAvailabilityType, fmt.Sprintf("high availability (%s) needs %s", ha, HighAvailabilityStorageDir.Key()))
		}
		if ha == HighAvailabilityZooKeeper && Get(c, HighAvailabilityZooKeeperQuorum) == "" {
			report(HighAvailabilityType, fmt.Sprintf("high availability (%s) needs %s", ha, HighAvailabilityZooKeeperQuorum.Key()))
		}
	}

	keytab, ktSet, _ := Lookup(c, KerberosKeytab)
	principal, prSet, _ := Lookup(c, KerberosPrincipal)
	switch {
	case ktSet && keytab != "" && principal == "":
		report(KerberosKeytab, fmt.Sprintf("%s is set but %s is not; set both or neither", KerberosKeytab.Key(), KerberosPrincipal.Key()))
	case prSet && principal != "" && keytab == "":
		useCache := Get(c, KerberosUseTicketCache)
		if !useCache {
			report(KerberosPrincipal, fmt.Sprintf("%s is set but %s is not, and %s is false: there is no way to log in",
				KerberosPrincipal.Key(), KerberosKeytab.Key(), KerberosUseTicketCache.Key()))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Suggestions

// suggest returns the known key nearest to an unknown one: the closest by
// edit distance (ignoring case) if close enough, else a known key that ends
// with it ("checkpointing.interval" -> "execution.checkpointing.interval").
func (ix *index) suggest(key string) string {
	if len(key) > 200 {
		return ""
	}
	lk := strings.ToLower(key)
	limit := max(2, len(key)/6)
	best, bestD := "", limit+1
	for _, cand := range ix.names {
		d := editDistance(lk, strings.ToLower(cand), bestD)
		if d < bestD {
			best, bestD = ix.current[cand], d
		}
	}
	if best != "" {
		return best
	}
	for _, cand := range ix.names {
		if strings.HasSuffix(strings.ToLower(cand), "."+lk) {
			return ix.current[cand]
		}
	}
	return ""
}

// editDistance returns the Levenshtein distance between a and b, or any
// value >= bound once it is known to be at least bound.
func editDistance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= bound || -d >= bound {
		return bound
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
