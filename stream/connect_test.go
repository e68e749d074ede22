package stream_test

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/stream"
)

func TestCoMapAndCoFlatMap(t *testing.T) {
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			env := newProcTestEnv(par, stream.Streaming)
			nums := stream.DataGen(env, 100, 0, func(i int64) int { return int(i) })
			words := stream.FromElements(env, "x", "yy", "zzz")
			mapped := stream.CoMap(stream.Connect(nums, words),
				func(i int) string { return fmt.Sprint("n", i) },
				func(s string) string { return "w" + s })
			flat := stream.CoFlatMap(stream.Connect(words, nums),
				func(s string, out stream.Collector[int]) {
					for range s {
						out.Collect(-1)
					}
				},
				func(i int, out stream.Collector[int]) {
					if i%10 == 0 {
						out.Collect(i)
					}
				})
			mres, fres := stream.Collect(mapped), stream.Collect(flat)
			executeOK(t, env)
			gotM, gotF := mres.Values(), fres.Values()
			slices.Sort(gotM)
			slices.Sort(gotF)
			var wantM []string
			for i := 0; i < 100; i++ {
				wantM = append(wantM, fmt.Sprint("n", i))
			}
			wantM = append(wantM, "wx", "wyy", "wzzz")
			slices.Sort(wantM)
			wantF := []int{-1, -1, -1, -1, -1, -1, 0, 10, 20, 30, 40, 50, 60, 70, 80, 90}
			if !slices.Equal(gotM, wantM) || !slices.Equal(gotF, wantF) {
				t.Fatalf("CoMap %v\nCoFlatMap %v", gotM, gotF)
			}
		})
	}
}

type reading struct {
	Sensor string
	Value  int
	TS     int64
}

type control struct {
	Sensor string
	On     bool
	TS     int64
}

// gate forwards a sensor's readings only while the control stream has it
// switched on, in event time: a reading is held until the watermark passes
// its timestamp, then judged by the latest control at or before it. The
// readings (list) and the control history (map) are the key's state,
// shared by both inputs; the result does not depend on how the two inputs
// interleave.
func gate() stream.KeyedCoProcessFunction[string, reading, control, string] {
	held := stream.NewListDescriptor[reading]("held")
	switches := stream.NewMapDescriptor[int64, bool]("switches")
	return stream.KeyedCoProcessFuncs[string, reading, control, string]{
		Element1: func(ctx *stream.KeyedContext[string], r reading, _ stream.Collector[string]) error {
			ctx.TimerService().RegisterEventTimeTimer(stream.Timestamp(r.TS))
			return stream.List(ctx, held).Add(r)
		},
		Element2: func(ctx *stream.KeyedContext[string], c control, _ stream.Collector[string]) error {
			return stream.MapOf(ctx, switches).Put(c.TS, c.On)
		},
		Timer: func(ctx *stream.OnTimerContext[string], ts stream.Timestamp, out stream.Collector[string]) error {
			sw, err := stream.MapOf(ctx, switches).Entries()
			if err != nil {
				return err
			}
			on, latest := false, int64(-1)
			for at, v := range sw {
				if at <= int64(ts) && at > latest {
					on, latest = v, at
				}
			}
			rs, err := stream.List(ctx, held).Get()
			if err != nil {
				return err
			}
			var keep []reading
			for _, r := range rs {
				switch {
				case r.TS > int64(ts):
					keep = append(keep, r)
				case on:
					out.Collect(fmt.Sprintf("%s=%d", r.Sensor, r.Value))
				}
			}
			return stream.List(ctx, held).Update(keep)
		},
	}
}

func TestKeyedCoProcessControlStream(t *testing.T) {
	readings := []reading{
		{"a", 1, 10}, {"b", 2, 15}, {"a", 3, 20}, {"b", 4, 25}, {"a", 5, 30},
		{"c", 6, 35}, {"b", 7, 40}, {"a", 8, 45}, {"c", 9, 50}, {"b", 10, 55},
	}
	controls := []control{
		{"a", true, 12}, {"b", true, 15}, {"a", false, 30}, {"c", true, 33},
		{"b", false, 41}, {"a", true, 44}, {"c", false, 50},
	}
	want := []stream.Record[string]{
		{Value: "b=2", Timestamp: 15}, {Value: "a=3", Timestamp: 20}, {Value: "b=4", Timestamp: 25},
		{Value: "c=6", Timestamp: 35}, {Value: "b=7", Timestamp: 40}, {Value: "a=8", Timestamp: 45},
	}
	for _, tc := range []struct {
		par  int
		mode stream.RuntimeMode
	}{{1, stream.Streaming}, {4, stream.Streaming}, {4, stream.Batch}} {
		t.Run(fmt.Sprintf("p%d %s", tc.par, tc.mode), func(t *testing.T) {
			env := newProcTestEnv(tc.par, tc.mode)
			rs := eventTimeSource(env, "readings", readings, func(r reading) int64 { return r.TS })
			cs := eventTimeSource(env, "controls", controls, func(c control) int64 { return c.TS })
			out := stream.KeyedCoProcess(stream.ConnectKeyed(
				stream.KeyBy(rs, func(r reading) string { return r.Sensor }),
				stream.KeyBy(cs, func(c control) string { return c.Sensor })), gate())
			res := stream.Collect(out)
			executeOK(t, env)
			if got := sortedRecords(res.Records(), cmp.Compare[string]); !slices.Equal(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

type order struct {
	ID   int
	Item string
	TS   int64
}

type payment struct {
	Order  int
	Amount int
	TS     int64
}

func TestIntervalJoinPairs(t *testing.T) {
	s := int64(1000)
	orders := []order{{1, "book", 0}, {2, "pen", 2 * s}, {3, "ink", 4 * s}, {1, "lamp", 10 * s}, {4, "cup", 11 * s}}
	payments := []payment{
		{2, 5, 1 * s},   // before order 2: outside [0, 5 s]
		{1, 10, 3 * s},  // book (0 + 3 s)
		{2, 6, 7 * s},   // pen (2 + 5 s: the upper bound, inclusive)
		{3, 7, 9*s + 1}, // ink + 5.001 s: too late
		{4, 12, 11 * s}, // cup, same instant
		{1, 11, 12 * s}, // lamp (10 + 2 s); book is 12 s back
		{5, 13, 13 * s}, // no such order
	}
	join := func(par int, mode stream.RuntimeMode, upperExclusive bool) []stream.Record[string] {
		env := newProcTestEnv(par, mode)
		os := eventTimeSource(env, "orders", orders, func(o order) int64 { return o.TS })
		ps := eventTimeSource(env, "payments", payments, func(p payment) int64 { return p.TS })
		j := stream.IntervalJoin(
			stream.KeyBy(os, func(o order) int { return o.ID }),
			stream.KeyBy(ps, func(p payment) int { return p.Order })).Between(0, 5*time.Second)
		if upperExclusive {
			j = j.UpperBoundExclusive()
		}
		paid := stream.IntervalJoinProcess(j, stream.ProcessJoinFunc[order, payment, string](
			func(ctx *stream.ProcessJoinContext, o order, p payment, out stream.Collector[string]) error {
				out.Collect(fmt.Sprintf("%s paid %d after %d ms", o.Item, p.Amount, ctx.RightTimestamp()-ctx.LeftTimestamp()))
				return nil
			}))
		res := stream.Collect(paid)
		executeOK(t, env)
		return sortedRecords(res.Records(), cmp.Compare[string])
	}
	want := []stream.Record[string]{
		{Value: "book paid 10 after 3000 ms", Timestamp: stream.Timestamp(3 * s)},
		{Value: "pen paid 6 after 5000 ms", Timestamp: stream.Timestamp(7 * s)},
		{Value: "cup paid 12 after 0 ms", Timestamp: stream.Timestamp(11 * s)},
		{Value: "lamp paid 11 after 2000 ms", Timestamp: stream.Timestamp(12 * s)},
	}
	for _, tc := range []struct {
		par  int
		mode stream.RuntimeMode
	}{{1, stream.Streaming}, {4, stream.Streaming}, {2, stream.Batch}} {
		t.Run(fmt.Sprintf("p%d %s", tc.par, tc.mode), func(t *testing.T) {
			if got := join(tc.par, tc.mode, false); !slices.Equal(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
	t.Run("upper bound exclusive", func(t *testing.T) {
		want := slices.DeleteFunc(slices.Clone(want), func(r stream.Record[string]) bool { return r.Value == "pen paid 6 after 5000 ms" })
		if got := join(4, stream.Streaming, true); !slices.Equal(got, want) {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
}

type threshold struct {
	ID    string
	Min   int
	Valid int64 // applies to readings from this time on
}

// alarms applies broadcast threshold rules to keyed readings. A reading is
// judged when the watermark passes it (an event-time timer), against the
// rules valid at its time, so the result does not depend on how the
// broadcast and keyed inputs interleave. It also counts readings per sensor
// (keyed state) to number its alarms.
func alarms(rules *stream.MapDescriptor[string, threshold]) stream.KeyedBroadcastProcessFunction[string, reading, threshold, string] {
	held := stream.NewListDescriptor[reading]("held")
	count := stream.NewValueDescriptor[int]("count")
	return stream.KeyedBroadcastProcessFuncs[string, reading, threshold, string]{
		Element: func(ctx *stream.KeyedBroadcastReadOnlyContext[string], r reading, _ stream.Collector[string]) error {
			ctx.TimerService().RegisterEventTimeTimer(stream.Timestamp(r.TS))
			return stream.List(ctx, held).Add(r)
		},
		Broadcast: func(ctx *stream.KeyedBroadcastContext[string], th threshold, _ stream.Collector[string]) error {
			stream.BroadcastStateOf(ctx, rules).Put(th.ID, th)
			return nil
		},
		Timer: func(ctx *stream.KeyedBroadcastOnTimerContext[string], ts stream.Timestamp, out stream.Collector[string]) error {
			rs, err := stream.List(ctx, held).Get()
			if err != nil {
				return err
			}
			var ids []string
			for id, th := range stream.ReadOnlyBroadcastStateOf(ctx, rules).All() {
				if th.Valid <= int64(ts) {
					ids = append(ids, id)
				}
			}
			sort.Strings(ids)
			var keep []reading
			for _, r := range rs {
				if r.TS > int64(ts) {
					keep = append(keep, r)
					continue
				}
				n, err := stream.Value(ctx, count).Value()
				if err != nil {
					return err
				}
				if err := stream.Value(ctx, count).Update(n + 1); err != nil {
					return err
				}
				for _, id := range ids {
					th, _ := stream.ReadOnlyBroadcastStateOf(ctx, rules).Get(id)
					if r.Value >= th.Min {
						out.Collect(fmt.Sprintf("%s #%d %d >= %s", r.Sensor, n+1, r.Value, id))
					}
				}
			}
			return stream.List(ctx, held).Update(keep)
		},
	}
}

func TestKeyedBroadcastRulesAppliedToKeyedElements(t *testing.T) {
	readings := []reading{
		{"a", 5, 10}, {"b", 50, 12}, {"a", 15, 20}, {"b", 8, 22}, {"a", 40, 30}, {"c", 100, 31}, {"b", 30, 40},
	}
	rules := []threshold{{"warn", 10, 0}, {"high", 45, 15}, {"warn2", 25, 30}}
	want := []stream.Record[string]{
		{Value: "b #1 50 >= warn", Timestamp: 12},
		{Value: "a #2 15 >= warn", Timestamp: 20},
		{Value: "a #3 40 >= warn", Timestamp: 30},
		{Value: "a #3 40 >= warn2", Timestamp: 30},
		{Value: "c #1 100 >= high", Timestamp: 31},
		{Value: "c #1 100 >= warn", Timestamp: 31},
		{Value: "c #1 100 >= warn2", Timestamp: 31},
		{Value: "b #3 30 >= warn", Timestamp: 40},
		{Value: "b #3 30 >= warn2", Timestamp: 40},
	}
	for _, tc := range []struct {
		par  int
		mode stream.RuntimeMode
	}{{1, stream.Streaming}, {4, stream.Streaming}, {4, stream.Batch}} {
		t.Run(fmt.Sprintf("p%d %s", tc.par, tc.mode), func(t *testing.T) {
			env := newProcTestEnv(tc.par, tc.mode)
			desc := stream.NewMapDescriptor[string, threshold]("rules")
			rs := eventTimeSource(env, "readings", readings, func(r reading) int64 { return r.TS })
			bs := stream.Broadcast(eventTimeSource(env, "rules", rules, func(th threshold) int64 { return th.Valid }), desc)
			out := stream.KeyedBroadcastProcess(stream.ConnectKeyedBroadcast(stream.KeyBy(rs, func(r reading) string { return r.Sensor }), bs), alarms(desc))
			res := stream.Collect(out)
			executeOK(t, env)
			if got := sortedRecords(res.Records(), cmp.Compare[string]); !slices.Equal(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestBroadcastReachesEverySubtask(t *testing.T) {
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			env := newProcTestEnv(par, stream.Streaming)
			seen := stream.NewMapDescriptor[string, bool]("seen")
			words := stream.Broadcast(stream.FromElements(env, "x", "y", "z").SetParallelism(1), seen)
			nums := stream.DataGen(env, 400, 0, func(i int64) int { return int(i) })
			out := stream.BroadcastProcess(stream.ConnectBroadcast(nums, words), stream.BroadcastProcessFuncs[int, string, string]{
				Element: func(ctx *stream.BroadcastReadOnlyContext, v int, out stream.Collector[string]) error {
					if v%100 == 0 {
						out.Collect(fmt.Sprint("n", v))
					}
					return nil
				},
				Broadcast: func(ctx *stream.BroadcastContext, w string, out stream.Collector[string]) error {
					st := stream.BroadcastStateOf(ctx, seen)
					st.Put(w, true)
					out.Collect(fmt.Sprintf("%s (%d seen)", w, st.Len()))
					return nil
				},
			})
			res := stream.Collect(out)
			executeOK(t, env)
			got := res.Values()
			slices.Sort(got)
			var want []string
			for i := 0; i < par; i++ {
				want = append(want, "x (1 seen)", "y (2 seen)", "z (3 seen)")
			}
			want = append(want, "n0", "n100", "n200", "n300")
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestProcessFunctionGraphNodes(t *testing.T) {
	env := newProcTestEnv(2, stream.Streaming)
	nums := stream.FromElements(env, 1, 2, 3)
	words := stream.FromElements(env, "a", "b")
	stamped := stream.AssignTimestampsAndWatermarks(nums, stream.ForMonotonousTimestamps[int]()).Name("assign")
	kn := stream.KeyBy(stamped, func(i int) int { return i })
	kw := stream.KeyBy(words, func(s string) int { return len(s) })
	noop := func(*stream.ProcessJoinContext, int, string, stream.Collector[int]) error { return nil }
	stream.Discard(stream.Process(nums, stream.ProcessFuncs[int, int]{Element: func(*stream.ProcessContext, int, stream.Collector[int]) error { return nil }}).Name("process"))
	stream.Discard(stream.KeyedProcess(kn, stream.KeyedProcessFuncs[int, int, int]{Element: func(*stream.KeyedContext[int], int, stream.Collector[int]) error { return nil }}).Name("keyed"))
	stream.Discard(stream.CoMap(stream.Connect(nums, words), func(int) int { return 0 }, func(string) int { return 0 }).Name("comap"))
	stream.Discard(stream.KeyedCoProcess(stream.ConnectKeyed(kn, kw), stream.KeyedCoProcessFuncs[int, int, string, int]{
		Element1: func(*stream.KeyedContext[int], int, stream.Collector[int]) error { return nil },
		Element2: func(*stream.KeyedContext[int], string, stream.Collector[int]) error { return nil },
	}).Name("keyed-co"))
	stream.Discard(stream.IntervalJoinProcess(stream.IntervalJoin(kn, kw).Between(0, time.Second), stream.ProcessJoinFunc[int, string, int](noop)).Name("join"))
	bs := stream.Broadcast(words)
	stream.Discard(stream.KeyedBroadcastProcess(stream.ConnectKeyedBroadcast(kn, bs), stream.KeyedBroadcastProcessFuncs[int, int, string, int]{
		Element:   func(*stream.KeyedBroadcastReadOnlyContext[int], int, stream.Collector[int]) error { return nil },
		Broadcast: func(*stream.KeyedBroadcastContext[int], string, stream.Collector[int]) error { return nil },
	}).Name("keyed-bcast"))
	g := stream.GraphOf(env, "nodes")
	type shape struct {
		Inputs                                    int
		Chaining                                  graph.Chaining
		Keyed, NeedsWatermarks, AssignsWatermarks bool
		In                                        string
	}
	got := map[string]shape{}
	for _, n := range g.Nodes {
		var in []string
		for _, e := range g.InEdges(n.ID) {
			in = append(in, fmt.Sprintf("%d:%s", e.Input, e.Partitioning))
		}
		got[n.Name] = shape{n.Inputs, n.Chaining, n.Keyed, n.NeedsWatermarks, n.AssignsWatermarks, fmt.Sprint(in)}
	}
	want := map[string]shape{
		"assign":      {1, graph.ChainAlways, false, false, true, "[0:FORWARD]"},
		"process":     {1, graph.ChainAlways, false, false, false, "[0:FORWARD]"},
		"keyed":       {1, graph.ChainAlways, true, false, false, "[0:HASH]"},
		"comap":       {2, graph.ChainHead, false, false, false, "[0:FORWARD 1:FORWARD]"},
		"keyed-co":    {2, graph.ChainHead, true, false, false, "[0:HASH 1:HASH]"},
		"join":        {2, graph.ChainHead, true, true, false, "[0:HASH 1:HASH]"},
		"keyed-bcast": {2, graph.ChainHead, true, false, false, "[0:HASH 1:BROADCAST]"},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("node %q: %+v, want %+v", name, got[name], w)
		}
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("graph does not validate: %v", err)
	}
}
