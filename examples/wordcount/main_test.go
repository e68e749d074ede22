package main

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/stream"
)

func TestWordCountOverFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(p, []byte("To be, or not to be\nthat is the Question\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 4} {
		env := stream.NewEnvironment(stream.WithParallelism(par), stream.WithRuntimeMode(stream.Automatic),
			stream.WithLogger(slog.New(slog.DiscardHandler)))
		res := stream.Collect(Build(file.ReadTextFile(env, p)))
		if _, err := env.Execute("wc"); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, wc := range res.Values() {
			if _, dup := got[wc.Word]; dup {
				t.Fatalf("p%d: %q emitted twice; bounded input in AUTOMATIC mode must emit final counts only", par, wc.Word)
			}
			got[wc.Word] = wc.Count
		}
		want := map[string]int64{"to": 2, "be": 2, "or": 1, "not": 1, "that": 1, "is": 1, "the": 1, "question": 1}
		if !maps.Equal(got, want) {
			t.Fatalf("p%d: got %v, want %v", par, got, want)
		}
	}
}
