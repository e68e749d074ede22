// Command gosdk is a Beam Go SDK program whose pipelines the job service's
// integration tests submit to Sluice (go_test.go builds it with `go build`).
// It runs on the runner --runner names, as beamx.Run does, without
// beamx's imports of every runner. It is its own module so that the Go SDK's runtime dependencies stay out
// of Sluice's; it requires the same Beam version as Sluice's go.mod.
//
//	gosdk --pipeline=wordcount --input=FILE --output=FILE \
//	  --runner=universal --endpoint=localhost:8099 --environment_type=LOOPBACK
//
// Pipelines: wordcount (textio, a ParDo splitting words, stats.Count,
// format, textio.Write), windowed (event-time stamps, fixed windows of
// 10 s, GroupByKey), sideinputs (singleton, iterable and multimap side
// inputs), combine (beam.CombinePerKey with a struct CombineFn),
// stateful (bag state and an event-time timer), mapstate (map and set
// state), sessions (session
// windows), flatten (Flatten and Reshuffle), teststream (a TestStream in
// fixed windows with early and late firings, accumulating, and allowed
// lateness; each pane written with its PaneInfo) and failing (a DoFn
// returning an error on element 7). A finished run prints its counters
// ("counter gosdk/words committed=N"). A failed run prints
// "pipeline failed: ERROR" and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec/optimized"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/protobuf/proto"
)

var (
	pipeline = flag.String("pipeline", "", "The pipeline to run: wordcount, windowed, sideinputs, combine or failing.")
	input    = flag.String("input", "", "The input file (wordcount).")
	output   = flag.String("output", "", "The output file.")
	// The translator's tests read what the SDK submits:
	// internal/beam/translate/testdata/gopipeline.pb is
	// gosdk --pipeline=wordcount,windowed,sideinputs,combine,stateful,mapstate,sessions,flatten --input=in.txt --output=out --write_pipeline=gopipeline.pb
	writePipeline = flag.String("write_pipeline", "", "Write the pipeline proto (in a LOOPBACK environment) to this file instead of running it; --pipeline may then name several.")
)

func init() {
	register.Function3x0(splitWords)
	register.Function2x1(formatCount)
	register.Function2x0(stamp)
	register.Function3x1(formatGroup)
	register.Function4x1(join)
	register.Function2x2(explode)
	register.Function2x0(parsePair)
	register.Function2x0(keyMod4)
	register.Function1x1(formatInt)
	register.Function2x1(formatSum)
	register.Combiner3[sumCount, int, string](&averageFn{})
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, string, int, func(string), error](&bufferFn{})
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, string, string, func(string), error](&tallyFn{})
	register.Function2x0(keyWord)
	register.Emitter2[string, string]()
	register.Function3x1(formatSession)
	register.Function4x1(formatPane)
	register.Function2x0(keyConst)
	register.Iter1[string]()
	register.Function2x0(stampSession)
	register.Emitter1[string]()
	register.Emitter2[string, int]()
	register.Emitter3[beam.EventTime, string, int]()
	register.Iter1[int]()
	register.Iter1[string]()
}

var (
	word  = regexp.MustCompile(`[\w']+`)
	words = beam.NewCounter("gosdk", "words")
)

func splitWords(ctx context.Context, line string, emit func(string)) {
	for _, w := range word.FindAllString(line, -1) {
		words.Inc(ctx, 1)
		emit(w)
	}
}

func formatCount(w string, n int) string { return fmt.Sprintf("%s: %d", w, n) }

// stamp makes event i the element (k(i%3), i) at i*7%45 s.
func stamp(i int, emit func(beam.EventTime, string, int)) {
	emit(mtime.FromMilliseconds(int64(i*7%45)*1000), fmt.Sprintf("k%d", i%3), i)
}

func formatGroup(w beam.Window, key string, values func(*int) bool) string {
	var vs []int
	var v int
	for values(&v) {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	iw := w.(window.IntervalWindow)
	return fmt.Sprintf("%s [%d,%d) %s", key, iw.Start.Milliseconds()/1000, iw.End.Milliseconds()/1000, strings.Join(s, ","))
}

// join formats a main element with its side inputs: the total (a
// singleton), the number of pairs (an iterable) and the key's values (a
// multimap).
func join(k string, total int, pairs func(*string) bool, byKey func(string) func(*int) bool) string {
	n := 0
	var p string
	for pairs(&p) {
		n++
	}
	var vs []int
	var v int
	for it := byKey(k); it(&v); {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return fmt.Sprintf("%s total=%d pairs=%d values=%v", k, total, n, vs)
}

// bufferFn keeps each key's values in bag state until an event-time
// timer, set past every element, fires once per key.
type bufferFn struct {
	Values state.Bag[int]
	Flush  timers.EventTime
}

func (f *bufferFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key string, v int, _ func(string)) error {
	if err := f.Values.Add(sp, v); err != nil {
		return err
	}
	f.Flush.Set(tp, time.UnixMilli(100_000))
	return nil
}

func (f *bufferFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(string)) error {
	vs, _, err := f.Values.Read(sp)
	if err != nil {
		return err
	}
	sum := 0
	for _, v := range vs {
		sum += v
	}
	emit(fmt.Sprintf("%s sum=%d count=%d", key, sum, len(vs)))
	return f.Values.Clear(sp)
}

// tallyFn counts each key's words in map state and keeps the distinct
// ones in set state, both written out when an event-time timer fires.
type tallyFn struct {
	Counts state.Map[string, int]
	Seen   state.Set[string]
	Flush  timers.EventTime
}

func (f *tallyFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, key, w string, _ func(string)) error {
	n, _, err := f.Counts.Get(sp, w)
	if err != nil {
		return err
	}
	if err := f.Counts.Put(sp, w, n+1); err != nil {
		return err
	}
	if err := f.Seen.Add(sp, w); err != nil {
		return err
	}
	f.Flush.Set(tp, time.UnixMilli(100_000))
	return nil
}

func (f *tallyFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, key string, timer timers.Context, emit func(string)) error {
	words, _, err := f.Counts.Keys(sp)
	if err != nil {
		return err
	}
	slices.Sort(words)
	var b strings.Builder
	b.WriteString(key)
	for _, w := range words {
		n, _, err := f.Counts.Get(sp, w)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, " %s=%d", w, n)
	}
	seen, _, err := f.Seen.Keys(sp)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, " seen=%d", len(seen))
	emit(b.String())
	if err := f.Counts.Clear(sp); err != nil {
		return err
	}
	return f.Seen.Clear(sp)
}

// keyWord makes element i the pair (k(i%2), one of a, b, c, d by (i/2)%4
// — k0's and k1's words alike).
func keyWord(i int, emit func(string, string)) {
	emit(fmt.Sprintf("k%d", i%2), string(rune('a'+(i/2)%4)))
}

// stampSession makes event i the element (k(i%2), i) at
// (i%10)*2 + (i/10)*60 s: two sessions of each key with a gap of 5 s.
func stampSession(i int, emit func(beam.EventTime, string, int)) {
	emit(mtime.FromMilliseconds(int64((i%10)*2+(i/10)*60)*1000), fmt.Sprintf("k%d", i%2), i)
}

func formatSession(w beam.Window, key string, values func(*int) bool) string {
	return formatGroup(w, key, values)
}

// keyConst keys every element by "k".
func keyConst(v string, emit func(string, string)) {
	emit("k", v)
}

// formatPane formats a group with its window and PaneInfo.
func formatPane(pane typex.PaneInfo, w beam.Window, key string, values func(*string) bool) string {
	var vs []string
	var v string
	for values(&v) {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	iw := w.(window.IntervalWindow)
	timing := [...]string{"EARLY", "ON_TIME", "LATE", "UNKNOWN"}[pane.Timing]
	return fmt.Sprintf("%s [%d,%d) %s %s first=%t last=%t index=%d nonspec=%d", key, iw.Start.Milliseconds()/1000, iw.End.Milliseconds()/1000,
		strings.Join(vs, ","), timing, pane.IsFirst, pane.IsLast, pane.Index, pane.NonSpeculativeIndex)
}

func explode(ctx context.Context, x int) (int, error) {
	if x == 7 {
		return 0, fmt.Errorf("sluice test: element %d is cursed", x)
	}
	return x, nil
}

func parsePair(p string, emit func(string, int)) {
	k, v, _ := strings.Cut(p, "=")
	n, _ := strconv.Atoi(v)
	emit(k, n)
}

func keyMod4(i int, emit func(string, int)) { emit(fmt.Sprintf("k%d", i%4), i) }

func formatInt(i int) string { return strconv.Itoa(i) }

func formatSum(k string, avg string) string { return k + " " + avg }

// averageFn is a CombineFn with an accumulator of its own: it lifts into
// the precombine, merge and extract phases.
type averageFn struct{}

type sumCount struct{ Sum, Count int }

func (*averageFn) CreateAccumulator() sumCount { return sumCount{} }
func (*averageFn) AddInput(a sumCount, v int) sumCount {
	return sumCount{a.Sum + v, a.Count + 1}
}
func (*averageFn) MergeAccumulators(a, b sumCount) sumCount {
	return sumCount{a.Sum + b.Sum, a.Count + b.Count}
}
func (*averageFn) ExtractOutput(a sumCount) string {
	return fmt.Sprintf("sum=%d count=%d", a.Sum, a.Count)
}

func build(s beam.Scope, pipeline, output string) error {
	if output == "" {
		return fmt.Errorf("--output is required")
	}
	switch pipeline {
	case "wordcount":
		if *input == "" {
			return fmt.Errorf("--input is required")
		}
		lines := textio.Read(s, *input)
		words := beam.ParDo(s, splitWords, lines)
		counts := stats.Count(s, words)
		textio.Write(s, output, beam.ParDo(s, formatCount, counts))
	case "windowed":
		events := beam.CreateList(s, seq(60))
		stamped := beam.ParDo(s, stamp, events)
		windowed := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), stamped)
		groups := beam.ParDo(s, formatGroup, beam.GroupByKey(s, windowed))
		// textio.Write groups by a fixed key: in one global window, so
		// that one file holds every window's groups.
		textio.Write(s, output, beam.WindowInto(s, window.NewGlobalWindows(), groups))
	case "sideinputs":
		main := beam.Create(s, "a", "b", "c")
		pairs := beam.ParDo(s, parsePair, beam.Create(s, "a=1", "b=2", "a=3"))
		total := stats.Sum(s, beam.DropKey(s, pairs))
		joined := beam.ParDo(s, join, main,
			beam.SideInput{Input: total},
			beam.SideInput{Input: beam.Create(s, "a=1", "b=2", "a=3")},
			beam.SideInput{Input: pairs})
		textio.Write(s, output, joined)
	case "combine":
		pairs := beam.ParDo(s, keyMod4, beam.CreateList(s, seq(100)))
		avg := beam.CombinePerKey(s, &averageFn{}, pairs)
		textio.Write(s, output, beam.ParDo(s, formatSum, avg))
	case "stateful":
		pairs := beam.ParDo(s, keyMod4, beam.CreateList(s, seq(40)))
		flushed := beam.ParDo(s, &bufferFn{Values: state.MakeBagState[int]("values"), Flush: timers.InEventTime("flush")}, pairs)
		textio.Write(s, output, flushed)
	case "mapstate":
		pairs := beam.ParDo(s, keyWord, beam.CreateList(s, seq(30)))
		tallies := beam.ParDo(s, &tallyFn{Counts: state.MakeMapState[string, int]("counts"), Seen: state.MakeSetState[string]("seen"), Flush: timers.InEventTime("flush")}, pairs)
		textio.Write(s, output, tallies)
	case "sessions":
		stamped := beam.ParDo(s, stampSession, beam.CreateList(s, seq(20)))
		sessions := beam.WindowInto(s, window.NewSessions(5*time.Second), stamped)
		groups := beam.ParDo(s, formatSession, beam.GroupByKey(s, sessions))
		textio.Write(s, output, beam.WindowInto(s, window.NewGlobalWindows(), groups))
	case "teststream":
		// The TestStream must be the pipeline's first transform (its
		// coder is "c0").
		c := teststream.NewConfig()
		steps := []error{
			c.AdvanceWatermark(0),
			c.AddElements(1000, "a", "b"),
			c.AddElements(3000, "c"),
			c.AdvanceWatermark(11000),
			c.AddElements(4000, "d"), // late, within the allowed lateness
			c.AdvanceWatermark(30000),
			c.AddElements(5000, "e"), // beyond it: dropped
			c.AddElements(25000, "f"),
			c.AdvanceWatermarkToInfinity(),
		}
		if err := errors.Join(steps...); err != nil {
			return err
		}
		keyed := beam.ParDo(s, keyConst, teststream.Create(s, c))
		windowed := beam.WindowInto(s, window.NewFixedWindows(10*time.Second), keyed,
			beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(trigger.AfterCount(2)).LateFiring(trigger.AfterCount(1))),
			beam.AllowedLateness(5*time.Second), beam.PanesAccumulate())
		groups := beam.ParDo(s, formatPane, beam.GroupByKey(s, windowed))
		textio.Write(s, output, beam.WindowInto(s, window.NewGlobalWindows(), groups))
	case "flatten":
		all := beam.Flatten(s, beam.Create(s, "a", "b", "c"), beam.Create(s, "d", "e"), beam.Create(s, "f"))
		textio.Write(s, output, beam.Reshuffle(s, all))
	case "failing":
		xs := beam.ParDo(s, explode, beam.CreateList(s, seq(20)))
		textio.Write(s, output, beam.ParDo(s, formatInt, xs))
	default:
		return fmt.Errorf("unknown --pipeline %q", pipeline)
	}
	return nil
}

func seq(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs
}

func main() {
	flag.Parse()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	if *writePipeline != "" {
		for _, name := range strings.Split(*pipeline, ",") {
			if err := build(s.Scope(name), name, *output+"."+name); err != nil {
				fmt.Fprintf(os.Stderr, "gosdk: %v\n", err)
				os.Exit(2)
			}
		}
		if err := write(p, *writePipeline); err != nil {
			fmt.Fprintf(os.Stderr, "gosdk: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := build(s, *pipeline, *output); err != nil {
		fmt.Fprintf(os.Stderr, "gosdk: %v\n", err)
		os.Exit(2)
	}
	start := time.Now()
	res, err := beam.Run(context.Background(), *runners.Runner, p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipeline failed: %v\n", err)
		os.Exit(1)
	}
	if res != nil {
		for _, c := range res.Metrics().AllMetrics().Counters() {
			fmt.Printf("counter %s/%s committed=%d\n", c.Namespace(), c.Name(), c.Committed)
		}
	}
	fmt.Printf("pipeline %s done in %s\n", *pipeline, time.Since(start))
}

// write marshals p as the universal runner does for a LOOPBACK
// environment (its worker pool's endpoint a placeholder).
func write(p *beam.Pipeline, path string) error {
	edges, _, err := p.Build()
	if err != nil {
		return err
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:external:v1", func(context.Context) string { return "localhost:0" })
	if err != nil {
		return err
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		return err
	}
	b, err := proto.Marshal(pb)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
