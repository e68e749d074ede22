package exec

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/codec"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/sql/planner"
	"github.com/sluice/sluice/internal/sql/types"
)

// The datagen connector (Flink's): rows of generated values, at
// 'rows-per-second' over all the source's subtasks (default 10000),
// 'number-of-rows' of them (default: unbounded), each physical column from
// its own generator, 'fields.<column>.kind' random (the default) or
// sequence.
//
// Row i of the table is a function of i alone: a sequence column is
// start + i, and a random column draws from a generator seeded by the
// row's and the column's index, so a restored job generates the very rows
// the failed one would have (Flink's random columns differ run to run).
// Timestamps are the exception, as in Flink: a random TIMESTAMP is the
// processing time at which the row is made, less a random part of
// 'fields.<column>.max-past'. Subtask s of p generates rows s, s+p, s+2p,
// ...: split s, whose position is its checkpointed state; after a restore
// at another parallelism split s goes to subtask s mod p.

// datagenSpec is a datagen table, checked and parsed.
type datagenSpec struct {
	table *planner.Table
	// rows is how many rows the table has (-1: unbounded).
	rows int64
	// rate is rows per second over all subtasks (0: unlimited).
	rate float64
	gens []columnGen // per column; nil for a computed column
	// proctime are the PROCTIME() columns.
	proctime []int
}

// columnGen makes column values: row i's value, given the processing
// time at which the row is made.
type columnGen func(i int64, now int64) any

// The datagen options.
const (
	optRowsPerSecond = "rows-per-second"
	optNumberOfRows  = "number-of-rows"
)

func newDatagenSpec(t *planner.Table) (*datagenSpec, error) {
	o := t.Options
	spec := &datagenSpec{table: t, rows: -1, rate: 10000}
	if v, ok := o[optRowsPerSecond]; ok {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return nil, fmt.Errorf("table %s: '%s' = '%s' is not a number of rows per second", t.Name, optRowsPerSecond, v)
		}
		spec.rate = r
	}
	if v, ok := o[optNumberOfRows]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("table %s: '%s' = '%s' is not a number of rows", t.Name, optNumberOfRows, v)
		}
		spec.rows = n
	}
	spec.gens = make([]columnGen, len(t.Columns))
	for ci, c := range t.Columns {
		if c.Type.Proctime {
			spec.proctime = append(spec.proctime, ci)
		}
		if c.Kind != planner.Physical {
			continue
		}
		g, n, err := newColumnGen(t, ci)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
		spec.gens[ci] = g
		if n >= 0 && (spec.rows < 0 || n < spec.rows) {
			spec.rows = n // a sequence ends the table (the first to end)
		}
	}
	return spec, nil
}

// fieldOpt reads 'fields.<column>.<name>'.
func fieldOpt(t *planner.Table, col, name string) (string, string, bool) {
	k := "fields." + col + "." + name
	v, ok := t.Options[k]
	return k, v, ok
}

// newColumnGen makes column ci's generator; n is the number of values of
// a sequence (-1 for a random column).
func newColumnGen(t *planner.Table, ci int) (columnGen, int64, error) {
	c := t.Columns[ci]
	kind := "random"
	if _, v, ok := fieldOpt(t, c.Name, "kind"); ok {
		kind = v
	}
	var g columnGen
	n := int64(-1)
	var err error
	switch kind {
	case "random":
		g, err = randomGen(t, c, ci)
	case "sequence":
		g, n, err = sequenceGen(t, c)
	default:
		k, _, _ := fieldOpt(t, c.Name, "kind")
		return nil, 0, fmt.Errorf("'%s' = '%s': want random or sequence", k, kind)
	}
	if err != nil {
		return nil, 0, err
	}
	if k, v, ok := fieldOpt(t, c.Name, "null-rate"); ok {
		rate, perr := strconv.ParseFloat(v, 64)
		if perr != nil || rate < 0 || rate > 1 {
			return nil, 0, fmt.Errorf("'%s' = '%s': want a fraction between 0 and 1", k, v)
		}
		if c.Type.NotNull && rate > 0 {
			return nil, 0, fmt.Errorf("'%s' = '%s': column %s is NOT NULL", k, v, c.Name)
		}
		if kind == "sequence" && rate > 0 {
			return nil, 0, fmt.Errorf("'%s': a sequence column (%s) has no NULLs", k, c.Name)
		}
		if rate > 0 {
			inner, salt := g, uint64(ci)<<32|0x6e756c6c
			g = func(i, now int64) any {
				if float64(mix(uint64(i), salt)>>11)/(1<<53) < rate {
					return nil
				}
				return inner(i, now)
			}
		}
	}
	return g, n, nil
}

// sequenceGen is start, start+1, ..., end: 'fields.#.start' and
// 'fields.#.end' are required, for integer, DECIMAL and string columns (a
// string sequence is the numbers' text).
func sequenceGen(t *planner.Table, c planner.Column) (columnGen, int64, error) {
	ks, vs, okS := fieldOpt(t, c.Name, "start")
	ke, ve, okE := fieldOpt(t, c.Name, "end")
	if !okS || !okE {
		return nil, 0, fmt.Errorf("sequence column %s needs '%s' and '%s'", c.Name, ks, ke)
	}
	start, err := strconv.ParseInt(strings.TrimSpace(vs), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("'%s' = '%s' is not an integer", ks, vs)
	}
	end, err := strconv.ParseInt(strings.TrimSpace(ve), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("'%s' = '%s' is not an integer", ke, ve)
	}
	if end < start {
		return nil, 0, fmt.Errorf("'%s' = %d is before '%s' = %d", ke, end, ks, start)
	}
	n := end - start + 1
	if n <= 0 {
		return nil, 0, fmt.Errorf("the sequence of column %s from %d to %d is longer than %d values", c.Name, start, end, int64(math.MaxInt64))
	}
	switch {
	case c.Type.IsInteger():
		lo, hi := intRange(c.Type.Kind)
		if start < lo || end > hi {
			return nil, 0, fmt.Errorf("the sequence of column %s from %d to %d does not fit %s", c.Name, start, end, c.Type.Plain())
		}
		return func(i, _ int64) any { return start + i }, n, nil
	case c.Type.Kind == types.Decimal:
		for _, v := range []int64{start, end} {
			if _, err := types.Cast(v, types.BIGINT, c.Type); err != nil {
				return nil, 0, fmt.Errorf("the sequence of column %s from %d to %d does not fit %s", c.Name, start, end, c.Type.Plain())
			}
		}
		return func(i, _ int64) any {
			v, _ := types.Cast(start+i, types.BIGINT, c.Type) // checked at both ends
			return v
		}, n, nil
	case c.Type.IsString():
		return func(i, _ int64) any { return strconv.FormatInt(start+i, 10) }, n, nil
	}
	return nil, 0, fmt.Errorf("column %s: a sequence of %s cannot be generated (integers, DECIMAL and strings can)", c.Name, c.Type.Plain())
}

// intRange is the range of an integer type.
func intRange(k types.Kind) (int64, int64) {
	switch k {
	case types.TinyInt:
		return math.MinInt8, math.MaxInt8
	case types.SmallInt:
		return math.MinInt16, math.MaxInt16
	case types.Int:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// randomGen draws values of the column's type: numbers uniformly between
// 'fields.#.min' and 'fields.#.max' (default the type's range), strings
// and bytes of 'fields.#.length' (default 100; 'fields.#.var-len' draws the
// length too), timestamps up to 'fields.#.max-past' before the row is made.
func randomGen(t *planner.Table, c planner.Column, ci int) (columnGen, error) {
	salt := uint64(ci) + 1
	typ := c.Type.Plain()
	minMax := func(lo, hi int64) (int64, int64, error) {
		for _, b := range []struct {
			name string
			v    *int64
		}{{"min", &lo}, {"max", &hi}} {
			if k, v, ok := fieldOpt(t, c.Name, b.name); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, 0, fmt.Errorf("'%s' = '%s' is not an integer", k, v)
				}
				*b.v = n
			}
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("column %s: 'max' %d is below 'min' %d", c.Name, hi, lo)
		}
		return lo, hi, nil
	}
	switch {
	case typ.Kind == types.Boolean:
		return func(i, _ int64) any { return mix(uint64(i), salt)&1 == 1 }, nil
	case typ.IsInteger():
		tlo, thi := intRange(typ.Kind)
		lo, hi, err := minMax(tlo, thi)
		if err != nil {
			return nil, err
		}
		if lo < tlo || hi > thi {
			return nil, fmt.Errorf("column %s: the range %d to %d does not fit %s", c.Name, lo, hi, typ)
		}
		span := uint64(hi - lo) // hi-lo+1 overflows only for the full int64 range
		return func(i, _ int64) any {
			r := mix(uint64(i), salt)
			if span == math.MaxUint64 {
				return int64(r)
			}
			return lo + int64(r%(span+1))
		}, nil
	case typ.Kind == types.Float || typ.Kind == types.Double:
		lo, hi := -math.MaxFloat32, float64(math.MaxFloat32)
		if typ.Kind == types.Double {
			lo, hi = -math.MaxFloat64/2, math.MaxFloat64/2 // hi-lo stays finite
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", &lo}, {"max", &hi}} {
			if k, v, ok := fieldOpt(t, c.Name, b.name); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
					return nil, fmt.Errorf("'%s' = '%s' is not a number", k, v)
				}
				*b.v = f
			}
		}
		if hi < lo {
			return nil, fmt.Errorf("column %s: 'max' %v is below 'min' %v", c.Name, hi, lo)
		}
		float := typ.Kind == types.Float
		return func(i, _ int64) any {
			v := lo + (hi-lo)*(float64(mix(uint64(i), salt)>>11)/(1<<53))
			if float {
				v = float64(float32(v))
			}
			return v
		}, nil
	case typ.Kind == types.Decimal:
		if typ.Precision > 18 {
			return nil, fmt.Errorf("column %s: random DECIMALs of more than 18 digits cannot be generated yet (%s)", c.Name, typ)
		}
		// Bounds in the type's unscaled units.
		bound := types.Pow10(typ.Precision) - 1
		lo, hi := -bound, bound
		for _, b := range []struct {
			name string
			v    *int64
		}{{"min", &lo}, {"max", &hi}} {
			if k, v, ok := fieldOpt(t, c.Name, b.name); ok {
				r, ok := new(big.Rat).SetString(strings.TrimSpace(v))
				if !ok {
					return nil, fmt.Errorf("'%s' = '%s' is not a number", k, v)
				}
				d, err := types.RatToDecimal(r, typ.Precision, typ.Scale)
				if err != nil {
					return nil, fmt.Errorf("'%s' = '%s' does not fit %s", k, v, typ)
				}
				*b.v = d
			}
		}
		if hi < lo {
			return nil, fmt.Errorf("column %s: 'max' is below 'min'", c.Name)
		}
		span := uint64(hi-lo) + 1
		return func(i, _ int64) any { return lo + int64(mix(uint64(i), salt)%span) }, nil
	case typ.IsString() || typ.Kind == types.Bytes:
		length := int64(100)
		if typ.Precision > 0 {
			length = int64(typ.Precision) // VARCHAR(n)
		}
		if k, v, ok := fieldOpt(t, c.Name, "length"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("'%s' = '%s' is not a length", k, v)
			}
			if typ.Precision > 0 && n > int64(typ.Precision) {
				return nil, fmt.Errorf("'%s' = %d is longer than %s", k, n, typ)
			}
			length = n
		}
		varLen := false
		if k, v, ok := fieldOpt(t, c.Name, "var-len"); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("'%s' = '%s': want true or false", k, v)
			}
			varLen = b
		}
		isBytes := typ.Kind == types.Bytes
		return func(i, _ int64) any {
			n := length
			state := mix(uint64(i), salt)
			if varLen && length > 0 {
				n = 1 + int64(state%uint64(length))
			}
			b := make([]byte, n)
			for j := range b {
				state = mix(state, salt)
				if isBytes {
					b[j] = byte(state)
				} else {
					b[j] = hexDigits[state&15] // Flink draws hex characters too
				}
			}
			if isBytes {
				return b
			}
			return string(b)
		}, nil
	case typ.IsTimestamp():
		var maxPast int64
		if k, v, ok := fieldOpt(t, c.Name, "max-past"); ok {
			d, err := parseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("'%s' = '%s' is not a duration (e.g. '5 s', '1 min', '10000' ms)", k, v)
			}
			maxPast = d.Milliseconds()
		}
		prec := typ.Precision
		return func(i, now int64) any {
			past := int64(0)
			if maxPast > 0 {
				past = int64(mix(uint64(i), salt) % uint64(maxPast+1))
			}
			return types.TruncateMillis(now-past, prec)
		}, nil
	case typ.Kind == types.Date:
		// Days around the epoch, as Flink's random dates: within about 30 years.
		return func(i, _ int64) any { return int64(mix(uint64(i), salt)%(365*60)) - 365*30 }, nil
	case typ.Kind == types.Time:
		return func(i, _ int64) any { return int64(mix(uint64(i), salt) % (24 * 3600 * 1000)) }, nil
	}
	return nil, fmt.Errorf("column %s: random values of %s cannot be generated", c.Name, typ)
}

const hexDigits = "0123456789abcdef"

// mix is SplitMix64's finaliser of x with a salt: a well-spread 64-bit
// value, the same for the same inputs.
func mix(x, salt uint64) uint64 {
	z := x + salt*0x9e3779b97f4a7c15 + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// parseDuration reads Flink's durations: a number of milliseconds, or a
// number and a unit (ms, s, min, h, d; with or without a space).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	var u time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		u = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		u = time.Second
	case "min", "m", "minute", "minutes":
		u = time.Minute
	case "h", "hour", "hours":
		u = time.Hour
	case "d", "day", "days":
		u = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return time.Duration(n) * u, nil
}

// datagenSplit is a share of the table's rows: Next, Next+Stride, ...
// below the table's end; its position is the source's state.
type datagenSplit struct {
	ID, Next, Stride int64
	// Watermark is the split's watermark (core.NoWatermark before its
	// first row).
	Watermark int64
}

// datagenPollBatch is how many rows one EmitNext makes at most.
const datagenPollBatch = 256

// datagenSource is one subtask of a datagen table's scan.
type datagenSource struct {
	spec     *datagenSpec
	ctx      *core.Context
	splits   []datagenSplit
	restored bool
	next     int // the split the next poll serves (round robin)
	pacer    clock.Pacer
	wait     <-chan struct{}
	emitted  int64 // the watermark emitted
	idle     bool
}

var datagenSplitCodec = codec.MustFor[datagenSplit]()

func (s *datagenSource) SnapshotState(_ *core.Context, _ int64) ([][]byte, bool, error) {
	out := make([][]byte, 0, len(s.splits))
	for _, sp := range s.splits {
		out = append(out, datagenSplitCodec.Append(nil, sp))
	}
	return out, true, nil // union: each subtask keeps its share on restore
}

func (s *datagenSource) RestoreState(ctx *core.Context, entries [][]byte) error {
	s.restored = true
	for _, e := range entries {
		sp, _, err := datagenSplitCodec.Decode(e)
		if err != nil {
			return fmt.Errorf("sql: table %s: restoring a datagen split: %w", s.spec.table.Name, err)
		}
		if int(sp.ID%int64(ctx.Parallelism())) == ctx.Subtask() {
			s.splits = append(s.splits, sp)
		}
	}
	slices.SortFunc(s.splits, func(a, b datagenSplit) int { return int(a.ID - b.ID) })
	return nil
}

func (s *datagenSource) Open(ctx *core.Context) error {
	s.ctx = ctx
	if s.spec.rate > 0 {
		s.pacer.PerSecond = s.spec.rate / float64(ctx.Parallelism())
	}
	s.emitted = core.NoWatermark
	if !s.restored {
		p := int64(ctx.Parallelism())
		s.splits = []datagenSplit{{ID: int64(ctx.Subtask()), Next: int64(ctx.Subtask()), Stride: p, Watermark: core.NoWatermark}}
	}
	s.dropFinished()
	return s.emitWatermark()
}

// dropFinished forgets the splits that made their last row.
func (s *datagenSource) dropFinished() {
	if s.spec.rows < 0 {
		return
	}
	s.splits = slices.DeleteFunc(s.splits, func(sp datagenSplit) bool { return sp.Next >= s.spec.rows })
}

func (s *datagenSource) Available() <-chan struct{} { return s.wait }

// permits is how many rows the rate allows now.
func (s *datagenSource) permits(now int64) int64 {
	n, next := s.pacer.Allow(now, datagenPollBatch)
	if n == 0 {
		s.wait, _ = s.ctx.Clock().AfterMillis(next)
	}
	return n
}

func (s *datagenSource) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	if len(s.splits) == 0 {
		if s.spec.rows < 0 {
			// More subtasks than splits after a rescale: nothing to make, ever.
			s.wait = nil
			return core.NothingAvailable, s.setIdle(true)
		}
		return core.EndOfInput, nil
	}
	now := ctx.CurrentProcessingTime()
	n := s.permits(now)
	if n == 0 {
		return core.NothingAvailable, nil
	}
	s.next %= len(s.splits)
	sp := &s.splits[s.next]
	s.next++
	t := s.spec.table
	for ; n > 0 && (s.spec.rows < 0 || sp.Next < s.spec.rows); n-- {
		vals := make([]any, len(t.Columns))
		for ci, g := range s.spec.gens {
			if g != nil {
				vals[ci] = g(sp.Next, now)
			}
		}
		for _, ci := range s.spec.proctime {
			vals[ci] = now
		}
		for ci, c := range t.Columns {
			if c.Kind != planner.Computed || c.Type.Proctime {
				continue
			}
			v, err := c.Expr.Eval(vals)
			if err != nil {
				return core.EndOfInput, fmt.Errorf("sql: table %s: computed column %s: %w", t.Name, c.Name, err)
			}
			vals[ci] = v
		}
		ts := core.NoTimestamp
		if t.Rowtime >= 0 {
			if v, ok := vals[t.Rowtime].(int64); ok {
				ts = v
			}
		}
		if err := ctx.Emit(core.RowRecord(core.Row{Values: vals}), ts); err != nil {
			return core.EndOfInput, err
		}
		if t.Watermark != nil {
			w, err := t.Watermark.Eval(vals)
			if err != nil {
				return core.EndOfInput, fmt.Errorf("sql: table %s: watermark: %w", t.Name, err)
			}
			if w, ok := w.(int64); ok && w > sp.Watermark {
				sp.Watermark = w
			}
		}
		sp.Next += sp.Stride
		s.pacer.Took(1)
	}
	s.dropFinished()
	if err := s.emitWatermark(); err != nil {
		return core.EndOfInput, err
	}
	if len(s.splits) == 0 {
		return core.EndOfInput, nil
	}
	return core.MoreAvailable, nil
}

// emitWatermark emits the least of the splits' watermarks when it
// advanced; a split without rows yet holds it back.
func (s *datagenSource) emitWatermark() error {
	if s.spec.table.Watermark == nil {
		return nil
	}
	if len(s.splits) == 0 {
		return nil // the end of input carries the last watermark
	}
	if err := s.setIdle(false); err != nil {
		return err
	}
	wm := int64(core.MaxWatermark)
	for _, sp := range s.splits {
		wm = min(wm, sp.Watermark)
	}
	if wm > s.emitted && wm != core.NoWatermark {
		s.emitted = wm
		return s.ctx.EmitWatermark(wm)
	}
	return nil
}

func (s *datagenSource) setIdle(idle bool) error {
	if idle == s.idle {
		return nil
	}
	s.idle = idle
	return s.ctx.Task().EmitIdle(idle)
}
