package stream

import "testing"

// The per-record paths of the process-function operators allocate nothing
// for plain records once a key's state exists.
func TestProcessFunctionsDoNotAllocatePerRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	sum := NewValueDescriptor[int64]("sum")
	rules := NewMapDescriptor[int, int64]("rules")
	tests := []struct {
		name string
		run  func(t *testing.T) func()
	}{
		{"Process", func(t *testing.T) func() {
			s := Process(FromElements(procTestEnv(), int64(0)), ProcessFuncs[int64, int64]{
				Element: func(ctx *ProcessContext, v int64, out Collector[int64]) error {
					out.Collect(v + int64(ctx.Timestamp()))
					return nil
				},
			})
			h := newHarness(t, s, harnessOpts{})
			return func() { mustOK(t, feed(h, int64(3), 5)); h.out.recs = h.out.recs[:0] }
		}},
		{"KeyedProcess with value state and a timer", func(t *testing.T) func() {
			ks := KeyBy(FromElements(procTestEnv(), int64(0)), func(v int64) int64 { return v % 8 })
			s := KeyedProcess(ks, KeyedProcessFuncs[int64, int64, int64]{
				Element: func(ctx *KeyedContext[int64], v int64, out Collector[int64]) error {
					st := Value(ctx, sum)
					cur, err := st.Value()
					if err != nil {
						return err
					}
					ctx.TimerService().RegisterEventTimeTimer(100) // deduplicated
					out.Collect(cur + v)
					return st.Update(cur + v)
				},
			})
			h := newHarness(t, s, harnessOpts{})
			for i := int64(0); i < 8; i++ {
				mustOK(t, feed(h, i, 1))
			}
			i := int64(0)
			return func() { i++; mustOK(t, feed(h, i, 1)); h.out.recs = h.out.recs[:0] }
		}},
		{"KeyedBroadcastProcess element side", func(t *testing.T) func() {
			env := procTestEnv()
			ks := KeyBy(FromElements(env, int64(0)), func(v int64) int64 { return v % 8 })
			bs := Broadcast(FromElements(env, int64(0)), rules)
			s := KeyedBroadcastProcess(ConnectKeyedBroadcast(ks, bs), KeyedBroadcastProcessFuncs[int64, int64, int64, int64]{
				Element: func(ctx *KeyedBroadcastReadOnlyContext[int64], v int64, out Collector[int64]) error {
					th, _ := ReadOnlyBroadcastStateOf(ctx, rules).Get(int(v % 2))
					if v >= th {
						out.Collect(v)
					}
					return nil
				},
				Broadcast: func(ctx *KeyedBroadcastContext[int64], v int64, _ Collector[int64]) error {
					BroadcastStateOf(ctx, rules).Put(int(v%2), v)
					return nil
				},
			})
			h := newHarness(t, s, harnessOpts{})
			mustOK(t, feedTo(h, 1, int64(4), 0))
			mustOK(t, feedTo(h, 1, int64(5), 0))
			i := int64(0)
			return func() { i++; mustOK(t, feed(h, i, 1)); h.out.recs = h.out.recs[:0] }
		}},
		{"AssignTimestampsAndWatermarks", func(t *testing.T) func() {
			s := AssignTimestampsAndWatermarks(FromElements(procTestEnv(), int64(0)),
				ForMonotonousTimestamps[int64]().WithTimestampAssigner(func(v int64, _ Timestamp) Timestamp { return Timestamp(v) }))
			h := newHarness(t, s, harnessOpts{})
			i := int64(0)
			return func() { i++; mustOK(t, feed(h, i, noTimestamp)); h.out.recs = h.out.recs[:0] }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			step := tc.run(t)
			step() // warm up
			if n := testing.AllocsPerRun(200, step); n != 0 {
				t.Fatalf("%.1f allocations per record, want 0", n)
			}
		})
	}
}
