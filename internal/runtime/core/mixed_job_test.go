package core_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/jobmaster"
	"github.com/sluice/sluice/internal/runtime/task"
)

// numbers is a typed source, as the typed API writes them: a task.Factory
// whose subtask k emits the int64s below n congruent to k modulo the
// parallelism.
type numbers struct{ n int64 }

func (numbers) OutType() task.TypeOps                { return task.TypeOf[int64]() }
func (numbers) SideOutputs() map[string]task.TypeOps { return nil }
func (f numbers) Create(ctx *task.Context, out any, _ map[string]any) (task.Operator, []any, error) {
	return &numbersOp{out: out.(task.Output[int64]), next: int64(ctx.Subtask), step: int64(ctx.Parallelism), n: f.n}, nil, nil
}

type numbersOp struct {
	out           task.Output[int64]
	next, step, n int64
}

func (s *numbersOp) EmitNext() (task.SourceStatus, error) {
	if s.next >= s.n {
		return task.EndOfInput, s.out.EmitWatermark(task.MaxWatermark)
	}
	v := s.next
	s.next += s.step
	return task.MoreAvailable, s.out.Collect(v, v)
}
func (s *numbersOp) Available() <-chan struct{}      { return nil }
func (s *numbersOp) Open() error                     { return nil }
func (s *numbersOp) ProcessWatermark(wm int64) error { return s.out.EmitWatermark(wm) }
func (s *numbersOp) Finish() error                   { return nil }
func (s *numbersOp) Close() error                    { return nil }

// residueCount counts the numbers per residue modulo 3 (the key, encoded
// as its decimal string) in value state and emits the counts at the end.
type residueCount struct {
	count  *core.ValueState
	closed *atomic.Int64
}

func (c *residueCount) Close() error {
	c.closed.Add(1)
	return nil
}

func (c *residueCount) Open(ctx *core.Context) error {
	var err error
	c.count, err = ctx.ValueState("count")
	return err
}

func (c *residueCount) ProcessElement(ctx *core.Context, _ int, r core.Record, _ int64) error {
	b, _, err := c.count.Get(core.VoidNamespace)
	if err != nil {
		return err
	}
	n, _ := binary.Uvarint(b)
	if err := c.count.Put(core.VoidNamespace, binary.AppendUvarint(nil, n+1)); err != nil {
		return err
	}
	return nil
}

// Finish emits every key's count: outside a record, it sets the keys
// itself.
func (c *residueCount) Finish(ctx *core.Context) error {
	return c.count.Keys(core.VoidNamespace, func(key string) error {
		if err := ctx.SetCurrentKey(key); err != nil {
			return err
		}
		b, _, err := c.count.Get(core.VoidNamespace)
		if err != nil {
			return err
		}
		n, _ := binary.Uvarint(b)
		return ctx.Emit(core.BytesRecord(fmt.Appendf(nil, "%s:%d", key, n)), core.NoTimestamp)
	})
}

func residueKey(r core.Record, dst []byte) []byte {
	return strconv.AppendInt(dst, r.Value().(int64)%3, 10)
}

// TestTypedAndUntypedOperatorsShareAJob: a typed source (the engine's
// int64 fast path) feeds an untyped keyed operator, which sees its records
// as values and keys them by an encoded key.
func TestTypedAndUntypedOperatorsShareAJob(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var closed atomic.Int64
	b := core.NewBuilder(2, 0)
	src := core.AddTyped(b, "source", "numbers", nil, core.TypeOf[int64](), numbers{n: 100})
	src.Node().Bounded = true
	counts := core.Transform(src.KeyBy(residueKey), core.OperatorSpec{Kind: "count", Out: core.Bytes(),
		New: func() core.Operator { return &residueCount{closed: &closed} }}).SetParallelism(3)
	core.Sink(counts, core.OperatorSpec{New: func() core.Operator { return collect{&mu, &got} }}).SetParallelism(1)
	j, err := jobmaster.Start(context.Background(), planOf(t, b), jobmaster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"0:34", "1:33", "2:33"}; !slices.Equal(got, want) {
		t.Fatalf("counts %q, want %q", got, want)
	}
	if n := closed.Load(); n != 3 {
		t.Fatalf("%d of 3 subtasks of the count were closed", n)
	}

	// A typed factory of another type than declared is a build error.
	bad := core.NewBuilder(1, 0)
	core.AddTyped(bad, "source", "numbers", nil, core.Bytes(), numbers{})
	if _, err := bad.Build("bad", nil); err == nil {
		t.Fatal("a typed int64 source declared as bytes was accepted")
	}
}

func TestStreamSettingsReachTheGraph(t *testing.T) {
	type node struct {
		uid      string
		par, max int
		chaining graph.Chaining
	}
	b := core.NewBuilder(4, 64)
	noop := func() core.Operator { return merge{} }
	src := core.AddSource(b, core.SourceSpec{Out: core.Bytes(), New: func() core.Source { return nil }}).UID("s").SetParallelism(2)
	edges := map[string]graph.Partitioning{}
	for _, tc := range []struct {
		name string
		in   core.Stream
		want graph.Partitioning
	}{
		{"forward", src.Forward(), graph.Rebalance}, // 2 → 4 subtasks
		{"rebalance", src.Rebalance(), graph.Rebalance},
		{"broadcast", src.Broadcast(), graph.Broadcast},
		{"global", src.Global(), graph.Global},
		{"hash", src.KeyBy(core.BytesKey), graph.Hash},
		{"keyed then broadcast", src.KeyBy(core.BytesKey).Broadcast(), graph.Broadcast},
	} {
		core.Sink(tc.in, core.OperatorSpec{Name: tc.name, New: noop})
		edges[tc.name] = tc.want
	}
	chained := core.Transform(src, core.OperatorSpec{Name: "own task", Out: core.Bytes(), New: noop}).DisableChaining().UID("own").SetMaxParallelism(8).SetParallelism(2)
	head := core.Transform(chained, core.OperatorSpec{Name: "head", Out: core.Bytes(), New: noop}).StartNewChain().SetParallelism(2)
	two := core.Transform2(src.KeyBy(core.BytesKey), head.Broadcast(), core.OperatorSpec{Name: "keyed broadcast", Out: core.Bytes(), New: noop})

	g, err := b.Build("settings", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if want, ok := edges[n.Name]; ok {
			if got := g.InEdges(n.ID)[0].Partitioning; got != want {
				t.Errorf("%s: edge %s, want %s", n.Name, got, want)
			}
			if n.Keyed != (want == graph.Hash) {
				t.Errorf("%s: keyed %v", n.Name, n.Keyed)
			}
		}
	}
	for _, tc := range []struct {
		s    core.Stream
		want node
	}{
		{src, node{"s", 2, 64, graph.ChainAlways}},
		{chained, node{"own", 2, 8, graph.ChainNever}},
		{head, node{"", 2, 64, graph.ChainHead}},
		{two, node{"", 4, 64, graph.ChainHead}},
	} {
		n := tc.s.Node()
		if got := (node{n.UID, n.Parallelism, n.MaxParallelism, n.Chaining}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", n.Name, got, tc.want)
		}
	}
	if !two.Node().Keyed {
		t.Error("a two-input operator with a keyed input is not keyed")
	}
}
