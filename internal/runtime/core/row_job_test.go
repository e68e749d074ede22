package core_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
)

// A job over Row records: two sources merged by a two-input operator,
// keyed by a field into an operator with list and map state and
// processing-time timers (on a manual clock), results as rows and an
// audit trail on a Bytes side output.

// rowProbe is what the row job's operators tell the test, and the clock.
type rowProbe struct {
	clk     *clock.Manual
	total   int // records the sources emit
	keys    int // distinct users
	seen    atomic.Int64
	fired   atomic.Int64
	allIn   chan struct{} // closed when the keyed operator has every record
	allDone chan struct{} // closed when every key's timer fired
}

// rowSource emits its rows; the clock source then waits until every
// record reached the keyed operator, moves processing time past the
// timers and waits until they fired before it ends (pending processing
// timers are dropped at the end of input).
type rowSource struct {
	rows  []core.Row
	probe *rowProbe // nil: not the clock source
	pos   int
	moved bool
}

func (s *rowSource) EmitNext(ctx *core.Context) (core.SourceStatus, error) {
	if s.pos < len(s.rows) {
		r := s.rows[s.pos]
		s.pos++
		return core.MoreAvailable, ctx.Emit(core.RowRecord(r), core.NoTimestamp)
	}
	if s.probe == nil {
		return core.EndOfInput, nil
	}
	select {
	case <-s.probe.allIn:
	default:
		return core.NothingAvailable, nil
	}
	if !s.moved {
		s.moved = true
		s.probe.clk.Set(100)
	}
	select {
	case <-s.probe.allDone:
		return core.EndOfInput, nil
	default:
		return core.NothingAvailable, nil
	}
}

func (s *rowSource) Available() <-chan struct{} {
	if s.probe == nil {
		return nil
	}
	select {
	case <-s.probe.allIn:
		return s.probe.allDone
	default:
		return s.probe.allIn
	}
}

// merge forwards the records of both inputs.
type merge struct{}

func (merge) ProcessElement(ctx *core.Context, _ int, r core.Record, ts int64) error {
	return ctx.Emit(r, ts)
}

// basket keeps, per user, the items (list state) and the amount per item
// (map state), and at processing time 50 emits the user's row and the
// audit of the amounts.
type basket struct {
	probe   *rowProbe
	items   *core.ListState
	amounts *core.MapState
}

func (b *basket) Open(ctx *core.Context) error {
	var err error
	if b.items, err = ctx.ListState("items"); err != nil {
		return err
	}
	b.amounts, err = ctx.MapState("amounts")
	return err
}

func (b *basket) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	row := r.Row()
	item, amount := row.Values[1].(string), row.Values[2].(int64)
	if err := b.items.Add(core.VoidNamespace, []byte(item)); err != nil {
		return err
	}
	prev, _, err := b.amounts.Get(core.VoidNamespace, item)
	if err != nil {
		return err
	}
	sum, _ := binary.Varint(prev)
	if err := b.amounts.Put(core.VoidNamespace, item, binary.AppendVarint(nil, sum+amount)); err != nil {
		return err
	}
	if err := ctx.RegisterProcessingTimer(core.VoidNamespace, 50); err != nil {
		return err
	}
	if b.probe.seen.Add(1) == int64(b.probe.total) {
		close(b.probe.allIn)
	}
	return nil
}

func (b *basket) OnTimer(ctx *core.Context, t core.Timer) error {
	items, err := b.items.Get(t.Namespace)
	if err != nil {
		return err
	}
	var names []string
	for _, it := range items {
		names = append(names, string(it))
	}
	slices.Sort(names)
	var total int64
	err = b.amounts.Entries(t.Namespace, func(item string, v []byte) error {
		n, _ := binary.Varint(v)
		total += n
		return ctx.EmitSide("audit", core.BytesRecord(fmt.Appendf(nil, "%s:%s=%d", t.Key, item, n)), core.NoTimestamp)
	})
	if err != nil {
		return err
	}
	out := core.Row{Kind: core.Insert, Values: []any{t.Key, strings.Join(names, ","), total, t.Domain == core.ProcessingTime}}
	if err := ctx.Emit(core.RowRecord(out), core.NoTimestamp); err != nil {
		return err
	}
	if err := b.items.Clear(t.Namespace); err != nil {
		return err
	}
	if err := b.amounts.Clear(t.Namespace); err != nil {
		return err
	}
	if b.probe.fired.Add(1) == int64(b.probe.keys) {
		close(b.probe.allDone)
	}
	return nil
}

// collect is a sink appending what it gets to a shared list.
type collect struct {
	mu  *sync.Mutex
	out *[]string
}

func (c collect) ProcessElement(_ *core.Context, _ int, r core.Record, _ int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(r.Bytes())
	if r.Kind() == core.KindRow {
		s = r.Row().String()
	}
	*c.out = append(*c.out, s)
	return nil
}

// userKey keys an order by its user field (a string key's encoding is its
// bytes, as for the typed API).
func userKey(r core.Record, dst []byte) []byte { return append(dst, r.Row().Values[0].(string)...) }

func TestRowJob(t *testing.T) {
	in, err := core.NewSchema(core.Field{Name: "user", Type: core.Varchar}, core.Field{Name: "item", Type: core.Varchar}, core.Field{Name: "amount", Type: core.BigInt})
	if err != nil {
		t.Fatal(err)
	}
	outSchema, err := core.NewSchema(core.Field{Name: "user", Type: core.Varchar}, core.Field{Name: "items", Type: core.Varchar}, core.Field{Name: "total", Type: core.BigInt}, core.Field{Name: "processing_time", Type: core.Boolean})
	if err != nil {
		t.Fatal(err)
	}
	order := func(user, item string, amount int64) core.Row {
		return core.Row{Values: []any{user, item, amount}}
	}
	a := []core.Row{order("ann", "tea", 3), order("bob", "jam", 5), order("ann", "tea", 4), order("cyd", "pen", 1)}
	b := []core.Row{order("bob", "tea", 2), order("ann", "pen", 10), order("dee", "ink", 7)}
	probe := &rowProbe{clk: clock.NewManual(0), total: len(a) + len(b), keys: 4, allIn: make(chan struct{}), allDone: make(chan struct{})}

	var mu sync.Mutex
	var results, audit []string
	job := core.NewBuilder(2, 0)
	srcA := core.AddSource(job, core.SourceSpec{Name: "orders a", Out: core.RowType(in), Bounded: true,
		New: func() core.Source { return &rowSource{rows: a, probe: probe} }}).SetParallelism(1)
	srcB := core.AddSource(job, core.SourceSpec{Name: "orders b", Out: core.RowType(in), Bounded: true,
		New: func() core.Source { return &rowSource{rows: b} }}).SetParallelism(1)
	merged := core.Transform2(srcA, srcB.Rebalance(), core.OperatorSpec{Kind: "union", Out: core.RowType(in),
		New: func() core.Operator { return merge{} }}).SetParallelism(1)
	baskets := core.Transform(merged.KeyBy(userKey), core.OperatorSpec{Kind: "process", Name: "baskets", Out: core.RowType(outSchema),
		Sides: map[string]core.Type{"audit": core.Bytes()},
		New:   func() core.Operator { return &basket{probe: probe} }}).SetParallelism(2)
	core.Sink(baskets, core.OperatorSpec{New: func() core.Operator { return collect{&mu, &results} }}).SetParallelism(1)
	core.Sink(baskets.SideOutput("audit"), core.OperatorSpec{New: func() core.Operator { return collect{&mu, &audit} }}).SetParallelism(1)

	j, err := jobmaster.Start(context.Background(), planOf(t, job), jobmaster.Options{Clock: probe.clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(results)
	slices.Sort(audit)
	wantResults := []string{
		"+I[ann pen,tea,tea 17 true]",
		"+I[bob jam,tea 7 true]",
		"+I[cyd pen 1 true]",
		"+I[dee ink 7 true]",
	}
	wantAudit := []string{"ann:pen=10", "ann:tea=7", "bob:jam=5", "bob:tea=2", "cyd:pen=1", "dee:ink=7"}
	if !slices.Equal(results, wantResults) {
		t.Errorf("results:\n got %q\nwant %q", results, wantResults)
	}
	if !slices.Equal(audit, wantAudit) {
		t.Errorf("audit:\n got %q\nwant %q", audit, wantAudit)
	}
}
