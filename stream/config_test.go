package stream_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/stream"
)

func TestConfigurationDrivesTheEnvironment(t *testing.T) {
	c := conf.New().Set("parallelism.default", "3").Set("execution.runtime-mode", "BATCH")
	env := stream.NewEnvironment(stream.WithConfiguration(c), stream.WithLogger(slog.New(slog.DiscardHandler)))
	if env.Parallelism() != 3 {
		t.Fatalf("parallelism %d, want 3 from parallelism.default", env.Parallelism())
	}
	src := stream.FromElements(env, "a", "b", "a")
	res := stream.Collect(stream.Reduce(stream.KeyBy(stream.Map(src, func(s string) wc { return wc{s, 1} }), func(w wc) string { return w.Word }),
		func(a, b wc) wc { return wc{a.Word, a.Count + b.Count} }))
	if _, err := env.Execute("cfg"); err != nil {
		t.Fatal(err)
	}
	if got := res.Values(); len(got) != 2 {
		t.Fatalf("BATCH mode from the configuration should emit final counts only, got %v", got)
	}
	// An explicit option wins over the configuration.
	if p := stream.NewEnvironment(stream.WithConfiguration(c), stream.WithParallelism(2)).Parallelism(); p != 2 {
		t.Fatalf("option lost to configuration: parallelism %d", p)
	}
}

func TestBadConfigurationFailsExecuteNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("parallelism.default: zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(conf.EnvConfDir, dir)
	env := stream.NewEnvironment(stream.WithLogger(slog.New(slog.DiscardHandler)))
	stream.Discard(stream.FromElements(env, 1))
	_, err := env.Execute("bad")
	if !errors.Is(err, conf.ErrInvalid) || !strings.Contains(err.Error(), "parallelism.default") || !strings.Contains(err.Error(), "config.yaml:1") {
		t.Fatalf("want a validation error naming the key and line, got %v", err)
	}
}
