package state

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/keygroup"
)

// BenchmarkPebbleIncrementalCheckpoint builds a large pebble state (by
// default 4 Mi entries × 256-byte incompressible values: over 1 GiB), takes
// an incremental snapshot, then per iteration changes 100 keys and takes
// another, and reports what that one adds (the files an uploader has not
// seen) against the whole snapshot. It takes minutes and GiBs of disk: it
// is not part of the tests. Run it with
//
//	go test -run XXX -bench PebbleIncrementalCheckpoint -benchtime 3x -timeout 60m ./internal/runtime/state/
//
// SLUICE_BENCH_ENTRIES changes the number of entries; SLUICE_BENCH_DIR the
// directory (default: the system temp dir).
func BenchmarkPebbleIncrementalCheckpoint(b *testing.B) {
	entries := 4 << 20
	if s := os.Getenv("SLUICE_BENCH_ENTRIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("SLUICE_BENCH_ENTRIES: %v", err)
		}
		entries = n
	}
	const valueSize = 256
	dir, err := os.MkdirTemp(os.Getenv("SLUICE_BENCH_DIR"), "sluice-pebble-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk := clock.NewManual(0)
	k, err := NewKeyedWithBackend[int64](128, keygroup.RangeFor(128, 1, 0), clk, &PebbleBackend{Dir: dir, MemTableSize: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	tab, err := NewValueTable[int64, Void, []byte](k, "values", TTL{})
	if err != nil {
		b.Fatal(err)
	}
	rnd := rand.NewChaCha8([32]byte{7})
	val := make([]byte, valueSize)
	start := time.Now()
	for i := 0; i < entries; i++ {
		rnd.Read(val)
		k.SetCurrentKey(int64(i))
		if err := tab.Put(Void{}, val); err != nil {
			b.Fatal(err)
		}
	}
	fill := time.Since(start)

	start = time.Now()
	files, _, err := k.SnapshotFiles(1)
	if err != nil {
		b.Fatal(err)
	}
	firstTime := time.Since(start)
	uploaded := map[string]bool{}
	var total int64
	for _, f := range files {
		uploaded[f.Name] = true
		total += f.Size
	}
	k.ReleaseSnapshotFiles(1)
	b.Logf("state: %d entries × %d B values written in %v (%.0f entries/s); first snapshot: %d files, %.1f MiB, in %v",
		entries, valueSize, fill.Round(time.Millisecond), float64(entries)/fill.Seconds(), len(files), mib(total), firstTime.Round(time.Millisecond))

	var (
		lastFiles    []LocalFile
		lastManifest []byte
		deltaBytes   int64
		deltaFiles   int
		snapTime     time.Duration
	)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for j := 0; j < 100; j++ {
			rnd.Read(val)
			k.SetCurrentKey(int64(rnd.Uint64() % uint64(entries)))
			if err := tab.Put(Void{}, val); err != nil {
				b.Fatal(err)
			}
		}
		id := int64(n + 2)
		start := time.Now()
		files, m, err := k.SnapshotFiles(id)
		if err != nil {
			b.Fatal(err)
		}
		snapTime = time.Since(start)
		deltaBytes, deltaFiles, total = 0, 0, 0
		for _, f := range files {
			total += f.Size
			if !uploaded[f.Name] {
				uploaded[f.Name] = true
				deltaBytes += f.Size
				deltaFiles++
			}
		}
		b.Logf("snapshot %d after changing 100 keys: %d of %d files new, %d of %d bytes (%.4f%%), manifest %d B, in %v",
			id, deltaFiles, len(files), deltaBytes, total, 100*float64(deltaBytes)/float64(total), len(m), snapTime.Round(time.Microsecond))
		if lastFiles != nil {
			k.ReleaseSnapshotFiles(id - 1)
		}
		lastFiles, lastManifest = files, m
	}
	b.StopTimer()
	b.ReportMetric(float64(deltaBytes), "delta-bytes")
	b.ReportMetric(float64(deltaFiles), "delta-files")
	b.ReportMetric(float64(total), "snapshot-bytes")
	b.ReportMetric(float64(snapTime.Microseconds())/1000, "snapshot-ms")

	// Restoring the last snapshot (same parallelism: its files become the
	// database) and reading a key.
	start = time.Now()
	dst, err := NewKeyedWithBackend[int64](128, keygroup.RangeFor(128, 1, 0), clk, &PebbleBackend{Dir: filepath.Join(dir, "restore")})
	if err != nil {
		b.Fatal(err)
	}
	defer dst.Close()
	paths := map[string]string{}
	for _, f := range lastFiles {
		paths[f.Name] = f.Path
	}
	if err := dst.RestoreFiles(paths, [][]byte{lastManifest}); err != nil {
		b.Fatal(err)
	}
	got, err := NewValueTable[int64, Void, []byte](dst, "values", TTL{})
	if err != nil {
		b.Fatal(err)
	}
	dst.SetCurrentKey(int64(entries - 1))
	if v, ok, err := got.Get(Void{}); err != nil || !ok || len(v) != valueSize {
		b.Fatalf("restored key: %d bytes, %v, %v", len(v), ok, err)
	}
	b.Logf("restore of the last snapshot (%s): %v", fmt.Sprintf("%.1f MiB", mib(total)), time.Since(start).Round(time.Millisecond))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// BenchmarkValueTableHashMap is the in-memory table's Get and Put per
// record, the path every keyed operator takes with the hashmap backend.
func BenchmarkValueTableHashMap(b *testing.B) {
	k, _ := NewKeyed[int64](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0))
	tab, _ := NewValueTable[int64, Void, int64](k, "count", TTL{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.SetCurrentKey(int64(i % 10000))
		n, _, _ := tab.Get(Void{})
		tab.Put(Void{}, n+1)
	}
}

// BenchmarkValueTablePebble is the same on the pebble backend.
func BenchmarkValueTablePebble(b *testing.B) {
	k, err := NewKeyedWithBackend[int64](128, keygroup.RangeFor(128, 1, 0), clock.NewManual(0), &PebbleBackend{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	tab, _ := NewValueTable[int64, Void, int64](k, "count", TTL{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.SetCurrentKey(int64(i % 10000))
		n, _, _ := tab.Get(Void{})
		tab.Put(Void{}, n+1)
	}
}
