package stream_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/stream"
)

type wc struct {
	Word  string
	Count int
}

func wordCount(t *testing.T, par int, mode stream.RuntimeMode, lines []string) []wc {
	t.Helper()
	env := stream.NewEnvironment(stream.WithParallelism(par), stream.WithRuntimeMode(mode))
	src := stream.FromSlice(env, lines)
	words := stream.FlatMap(src, func(line string, out stream.Collector[wc]) {
		for _, w := range strings.Fields(line) {
			out.Collect(wc{strings.ToLower(w), 1})
		}
	})
	counts := stream.Reduce(stream.KeyBy(words, func(w wc) string { return w.Word }), func(a, b wc) wc {
		return wc{a.Word, a.Count + b.Count}
	})
	res := stream.Collect(counts)
	if _, err := env.Execute("wordcount"); err != nil {
		t.Fatal(err)
	}
	return res.Values()
}

func finalCounts(vals []wc) map[string]int {
	m := map[string]int{}
	for _, v := range vals {
		if v.Count > m[v.Word] {
			m[v.Word] = v.Count
		}
	}
	return m
}

func TestWordCountSameAtAnyParallelism(t *testing.T) {
	var lines []string
	for i := 0; i < 2000; i++ {
		lines = append(lines, fmt.Sprintf("the quick brown fox %d jumps over the lazy dog %d", i%7, i%13))
	}
	want := map[string]int{"the": 4000, "quick": 2000, "brown": 2000, "fox": 2000, "jumps": 2000, "over": 2000, "lazy": 2000, "dog": 2000}
	for i := 0; i < 13; i++ {
		want[fmt.Sprint(i)] += (2000 + 12 - i) / 13
	}
	for i := 0; i < 7; i++ {
		want[fmt.Sprint(i)] += (2000 + 6 - i) / 7
	}
	for _, par := range []int{1, 4} {
		t.Run(fmt.Sprintf("p%d", par), func(t *testing.T) {
			got := wordCount(t, par, stream.Streaming, lines)
			// Streaming emits a running count per record.
			if n := len(got); n != 2000*11 {
				t.Fatalf("got %d updates, want %d", n, 2000*11)
			}
			if fc := finalCounts(got); !mapsEqual(fc, want) {
				t.Fatalf("counts %v\nwant %v", fc, want)
			}
		})
	}
	t.Run("batch", func(t *testing.T) {
		got := wordCount(t, 3, stream.Batch, lines)
		if len(got) != len(want) {
			t.Fatalf("BATCH mode emitted %d results, want one per word (%d)", len(got), len(want))
		}
		if fc := finalCounts(got); !mapsEqual(fc, want) {
			t.Fatalf("counts %v\nwant %v", fc, want)
		}
	})
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReadTextFileAndFilter(t *testing.T) {
	dir := t.TempDir()
	p1 := filepath.Join(dir, "a.txt")
	p2 := filepath.Join(dir, "b.txt")
	os.WriteFile(p1, []byte("alpha\nbeta\r\ngamma"), 0o644)
	os.WriteFile(p2, []byte("delta\n\nepsilon\n"), 0o644)
	env := stream.NewEnvironment(stream.WithParallelism(2))
	lines := stream.Filter(stream.ReadTextFile(env, p1, p2), func(s string) bool { return s != "" })
	res := stream.Collect(stream.Map(lines, strings.ToUpper))
	if _, err := env.Execute("files"); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	slices.Sort(got)
	want := []string{"ALPHA", "BETA", "DELTA", "EPSILON", "GAMMA"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestMissingFileIsReportedAtExecute(t *testing.T) {
	env := stream.NewEnvironment(stream.WithParallelism(1))
	stream.Discard(stream.ReadTextFile(env, "/nonexistent/input.txt"))
	_, err := env.Execute("missing")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/input.txt") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want an error naming the missing file, got %v", err)
	}
}

func TestPanicInUserCodeFailsJobNamingOperator(t *testing.T) {
	env := stream.NewEnvironment(stream.WithParallelism(2))
	src := stream.DataGen(env, 10000, 0, func(i int64) int64 { return i })
	m := stream.Map(src, func(v int64) int64 { return v * 2 }).Name("double")
	boom := stream.Map(m, func(v int64) int64 {
		if v == 5000 {
			panic("boom at 5000")
		}
		return v
	}).Name("exploder")
	stream.Discard(stream.Map(boom, func(v int64) int64 { return v + 1 }).Name("after"))
	_, err := env.Execute("panics")
	if err == nil {
		t.Fatal("job with a panicking operator succeeded")
	}
	for _, want := range []string{`operator "exploder"`, "panicked: boom at 5000", "basic_test.go"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

func TestInvalidGraphsRejectedAtExecute(t *testing.T) {
	t.Run("parallelism above max", func(t *testing.T) {
		env := stream.NewEnvironment(stream.WithParallelism(1))
		src := stream.FromElements(env, 1, 2, 3)
		stream.Discard(stream.Map(src, func(i int) int { return i }).Name("wide").SetParallelism(8).SetMaxParallelism(4))
		_, err := env.Execute("x")
		if !errors.Is(err, graph.ErrInvalidGraph) || !strings.Contains(err.Error(), `operator "wide" (id 1): parallelism 8 is above its max parallelism 4`) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("duplicate uid", func(t *testing.T) {
		env := stream.NewEnvironment(stream.WithParallelism(1))
		src := stream.FromElements(env, 1, 2, 3).UID("src")
		stream.Discard(stream.Map(src, func(i int) int { return i }).Name("m").UID("src"))
		_, err := env.Execute("x")
		if !errors.Is(err, graph.ErrInvalidGraph) || !strings.Contains(err.Error(), `operator "m" (uid "src", id 1): uid "src" is already used`) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unhashable key", func(t *testing.T) {
		type k struct{ P *int }
		env := stream.NewEnvironment(stream.WithParallelism(1))
		src := stream.FromElements(env, 1, 2, 3).Name("numbers")
		stream.Discard(stream.Reduce(stream.KeyBy(src, func(int) k { return k{} }), func(a, b int) int { return a + b }))
		_, err := env.Execute("x")
		if err == nil || !strings.Contains(err.Error(), `KeyBy after operator "numbers"`) || !strings.Contains(err.Error(), "k.P") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("batch needs bounded sources", func(t *testing.T) {
		env := stream.NewEnvironment(stream.WithParallelism(1), stream.WithRuntimeMode(stream.Batch))
		stream.Discard(stream.DataGen(env, -1, 10, func(i int64) int64 { return i }).Name("endless"))
		_, err := env.Execute("x")
		if !errors.Is(err, graph.ErrInvalidGraph) || !strings.Contains(err.Error(), `"endless"`) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestUnionAndRebalance(t *testing.T) {
	env := stream.NewEnvironment(stream.WithParallelism(3))
	a := stream.DataGen(env, 1000, 0, func(i int64) int64 { return i })
	b := stream.DataGen(env, 500, 0, func(i int64) int64 { return 10000 + i }).SetParallelism(1)
	u := stream.Union(a, b.Rebalance())
	res := stream.Collect(stream.Map(u.Rebalance(), func(v int64) int64 { return v }).SetParallelism(2))
	if _, err := env.Execute("union"); err != nil {
		t.Fatal(err)
	}
	got := res.Values()
	slices.Sort(got)
	if len(got) != 1500 || got[0] != 0 || got[999] != 999 || got[1000] != 10000 || got[1499] != 10499 {
		t.Fatalf("got %d values: %v ... %v", len(got), got[:3], got[len(got)-3:])
	}
}
