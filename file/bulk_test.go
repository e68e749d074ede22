package file_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2/ocf"

	"github.com/sluice/sluice/file"
	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/avro"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/stream"
)

type reading struct {
	Sensor string  `avro:"sensor"`
	Seq    int64   `avro:"seq"`
	Value  float64 `avro:"value"`
}

const readingSchema = `{"type":"record","name":"Reading","namespace":"sluice.test","fields":[
	{"name":"sensor","type":"string"},
	{"name":"seq","type":"long"},
	{"name":"value","type":"double"}]}`

func readingOf(i int64) reading {
	return reading{Sensor: fmt.Sprintf("sensor-%d", i%7), Seq: i, Value: float64(i) / 4}
}

func ocfSink(dir string, opts ...avro.OCFOption) *file.BulkSink[reading] {
	return file.ForBulkFormat(dir, func(w io.Writer) (file.BulkWriter[reading], error) {
		return avro.NewOCFWriter[reading](readingSchema, w, opts...)
	}).WithBucketAssigner(file.BasePathBucketAssigner[reading]()).
		WithOutputFileConfig(file.OutputFileConfig{PartSuffix: ".avro"})
}

func ocfReader(r io.Reader) (file.BulkReader[reading], error) {
	return avro.NewOCFReader[reading](readingSchema, r)
}

// committedParts lists the committed part files under dir, failing on a
// hidden (in-progress or pending) one.
func committedParts(t *testing.T, dir string) []string {
	t.Helper()
	var parts []string
	for name := range filesUnder(t, dir) {
		if strings.HasPrefix(filepath.Base(name), ".") || !strings.HasSuffix(name, ".avro") {
			t.Fatalf("unexpected file %s after the job", name)
		}
		parts = append(parts, filepath.Join(dir, name))
	}
	slices.Sort(parts)
	return parts
}

// A job writes n records through the bulk sink as Avro container files,
// its parts rolled at each checkpoint; each part is a complete container
// file hamba's own decoder reads, with the writer schema in its header;
// a second job reads the parts back with the bulk source: exactly the n
// records.
func TestAvroContainerFilesThroughTheBulkSinkAndSource(t *testing.T) {
	for _, codec := range []avro.Codec{avro.Null, avro.Deflate} {
		t.Run(string(codec), func(t *testing.T) {
			const n = 3000
			dir := t.TempDir()
			env := asyncTestEnv(stream.WithParallelism(2), stream.WithCheckpointing(50*time.Millisecond, filepath.Join(t.TempDir(), "checkpoints")))
			stream.SinkToCommitting(stream.DataGen(env, n, 5000, readingOf), ocfSink(dir, avro.WithCodec(codec)))
			res, err := env.Execute("write")
			if err != nil {
				t.Fatal(err)
			}
			parts := committedParts(t, dir)
			// Two subtasks, each rolling at every checkpoint of a job of about 0.6 s.
			if len(parts) < 3 || res.Checkpoints < 2 {
				t.Fatalf("%d parts after %d checkpoints, want parts rolled at checkpoints: %v", len(parts), res.Checkpoints, parts)
			}
			var direct []reading
			for _, p := range parts {
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				dec, err := ocf.NewDecoder(f)
				if err != nil {
					t.Fatalf("hamba's decoder on %s: %v", p, err)
				}
				if got := string(dec.Metadata()["avro.codec"]); got != string(codec) {
					t.Fatalf("%s: codec %q, want %q", p, got, codec)
				}
				if got := dec.Schema().String(); !strings.Contains(got, `"name":"sluice.test.Reading"`) {
					t.Fatalf("%s: writer schema %s, want sluice.test.Reading", p, got)
				}
				for dec.HasNext() {
					var r reading
					if err := dec.Decode(&r); err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					direct = append(direct, r)
				}
				if err := dec.Error(); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				f.Close()
			}
			checkAllOnce(t, "hamba's decoder", direct, n)

			env = asyncTestEnv(stream.WithParallelism(2))
			got := stream.Collect(file.ReadBulk(env, ocfReader, parts...))
			if _, err := env.Execute("read"); err != nil {
				t.Fatal(err)
			}
			checkAllOnce(t, "the bulk source", got.Values(), n)
		})
	}
}

// checkAllOnce checks that rs are readingOf(0..n-1), each once.
func checkAllOnce(t *testing.T, who string, rs []reading, n int64) {
	t.Helper()
	if int64(len(rs)) != n {
		t.Fatalf("%s read %d records, want %d", who, len(rs), n)
	}
	seen := make([]bool, n)
	for _, r := range rs {
		if r.Seq < 0 || r.Seq >= n || seen[r.Seq] || r != readingOf(r.Seq) {
			t.Fatalf("%s read %+v: duplicated, out of range or wrong", who, r)
		}
		seen[r.Seq] = true
	}
}

// writeOCF writes readingOf(0..n-1) to a container file of blocks of 100
// records.
func writeOCF(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := avro.NewOCFWriter[reading](readingSchema, f, avro.WithBlockLength(100))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < n; i++ {
		if err := w.AddElement(readingOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// pacedReader hands out its first free records at once, then one a
// millisecond, so that a stop-with-savepoint finds the source mid-file
// (pacing, not synchronisation: the test waits on read, and the second
// run checks what the savepoint held).
type pacedReader struct {
	r     file.BulkReader[reading]
	free  int64
	read  *atomic.Int64
	ticks <-chan time.Time
}

func (p *pacedReader) Read() (reading, error) {
	if p.read.Load() >= p.free {
		<-p.ticks
	}
	v, err := p.r.Read()
	if err == nil {
		p.read.Add(1)
	}
	return v, err
}

// A source stopped with a savepoint in the middle of a file and restored
// from it reads every record of the file once: its position (records read
// in the file) is in the savepoint.
func TestBulkSourceResumesMidFileFromASavepoint(t *testing.T) {
	const n = 5000
	dir := t.TempDir()
	path := filepath.Join(dir, "readings.avro")
	writeOCF(t, path, n)
	ckpt := filepath.Join(dir, "checkpoints")

	var read atomic.Int64
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	env := asyncTestEnv(stream.WithParallelism(1), stream.WithCheckpointing(time.Hour, ckpt))
	first := stream.Collect(file.ReadBulk(env, func(r io.Reader) (file.BulkReader[reading], error) {
		br, err := ocfReader(r)
		return &pacedReader{r: br, free: 1000, read: &read, ticks: ticker.C}, err
	}, path).UID("readings"))
	client, err := env.ExecuteAsync(context.Background(), "first")
	if err != nil {
		t.Fatal(err)
	}
	testwait.EventuallyNil(t, 20*time.Second, "the first run to read 1100 records", func() error {
		if got := read.Load(); got < 1100 {
			return fmt.Errorf("read %d", got)
		}
		return nil
	})
	savepoint, err := client.StopWithSavepoint(filepath.Join(dir, "savepoints"), false)
	if err != nil {
		t.Fatalf("stop with savepoint: %v", err)
	}
	if _, err := client.Wait(); err != nil {
		t.Fatal(err)
	}
	before := first.Values()
	if len(before) < 1100 || len(before) >= n {
		t.Fatalf("the first run emitted %d records, want it stopped mid-file", len(before))
	}

	env = asyncTestEnv(stream.WithParallelism(1), stream.WithCheckpointing(time.Hour, ckpt), stream.WithSavepoint(savepoint, false))
	second := stream.Collect(file.ReadBulk(env, ocfReader, path).UID("readings"))
	if _, err := env.Execute("second"); err != nil {
		t.Fatal(err)
	}
	after := second.Values()
	if len(after) == 0 || after[0].Seq != int64(len(before)) {
		t.Fatalf("the restored run began with %v, want record %d", after[:min(1, len(after))], len(before))
	}
	checkAllOnce(t, "the two runs", append(before, after...), n)
}

// A corrupt container file fails the job with a *file.BulkReadError naming
// the file and the record, never the records' content.
func TestBulkSourceCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(b []byte)
		record  int64
	}{
		{"header", func(b []byte) { b[0] = 'X' }, 0},
		// The last block's sync marker: the two blocks before it are read.
		{"last block", func(b []byte) { b[len(b)-1] ^= 0xff }, 200},
		// Cut inside the last block: hamba's decoder alone would end the
		// file early without an error.
		{"truncated", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "readings.avro")
			writeOCF(t, path, 300)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil {
				tc.corrupt(b)
			} else {
				b = b[:len(b)-20]
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			env := asyncTestEnv(stream.WithParallelism(1))
			got := stream.Collect(file.ReadBulk(env, ocfReader, path))
			_, err = env.Execute("corrupt")
			var be *file.BulkReadError
			if !errors.As(err, &be) || !errors.Is(err, file.ErrUnreadableFile) || !errors.Is(err, formats.ErrMalformed) {
				t.Fatalf("error %v, want a *file.BulkReadError of formats.ErrMalformed", err)
			}
			if be.Path != path || be.Record != tc.record {
				t.Fatalf("error names %s at record %d, want %s at record %d", be.Path, be.Record, path, tc.record)
			}
			if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "sensor-") {
				t.Fatalf("error %q does not name the file or quotes a record", err)
			}
			if len(got.Values()) > int(tc.record) {
				t.Fatalf("%d records emitted before the failure at record %d", len(got.Values()), tc.record)
			}
		})
	}
}

// A bulk sink may roll by size and time as well (DefaultRollingPolicy):
// every rolled part is a complete container file; a part still in
// progress when the writer closes is deleted.
func TestBulkSinkRollsBySizeAndTime(t *testing.T) {
	dir := t.TempDir()
	sink := ocfSink(dir, avro.WithBlockLength(1)).
		WithRollingPolicy(file.DefaultRollingPolicy{MaxPartSize: 400, RolloverInterval: 10 * time.Second, InactivityInterval: -1}).
		WithBucketCheckInterval(time.Second)
	ctx := &fileSinkCtx{now: 1_000_000}
	sw, err := sink.CreateWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := sw.(stream.CommittingWriter[reading, file.Committable])
	write := func(from, to int64) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := w.Write(context.Background(), readingOf(i), stream.NoTimestamp); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 20)           // a header of about 300 bytes, then blocks of about 40: rolls by size
	ctx.advance(t, 10_000) // the part holding record 19 is 10 s old: rolls by time
	write(20, 21)
	cs, err := w.PrepareCommit(context.Background()) // rolls the part with record 20
	if err != nil {
		t.Fatal(err)
	}
	committer, err := sink.CreateCommitter()
	if err != nil {
		t.Fatal(err)
	}
	if err := committer.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	write(21, 24) // in progress at Close: abandoned
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	parts := committedParts(t, dir)
	if len(parts) < 4 || len(parts) != len(cs) {
		t.Fatalf("%d committed parts of %d committables, want at least 4 (by size, 1 by time, 1 at the checkpoint)", len(parts), len(cs))
	}
	var all []reading
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := avro.NewOCFReader[reading](readingSchema, f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for {
			v, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			all = append(all, v)
		}
		f.Close()
	}
	checkAllOnce(t, "the committed parts", all, 21)
	// The last two parts: the one rolled by time ends with record 19, the
	// one rolled at the checkpoint holds record 20 alone.
	last := func(p string) []reading {
		f, _ := os.Open(p)
		defer f.Close()
		r, err := avro.NewOCFReader[reading](readingSchema, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []reading
		for v, err := r.Read(); err == nil; v, err = r.Read() {
			out = append(out, v)
		}
		return out
	}
	byCounter := partsByCounter(t, parts)
	if got := last(byCounter[len(byCounter)-2]); len(got) == 0 || got[len(got)-1].Seq != 19 {
		t.Fatalf("the part rolled by time holds %+v, want it to end with record 19", got)
	}
	if got := last(byCounter[len(byCounter)-1]); len(got) != 1 || got[0].Seq != 20 {
		t.Fatalf("the part rolled at the checkpoint holds %+v, want record 20 alone", got)
	}
}

// partsByCounter orders part files by their counter.
func partsByCounter(t *testing.T, parts []string) []string {
	t.Helper()
	out := make([]string, len(parts))
	for _, p := range parts {
		m := finalPartRE.FindStringSubmatch(strings.TrimSuffix(filepath.Base(p), ".avro"))
		if m == nil {
			t.Fatalf("part %s is not named part-<uuid>-<subtask>-<counter>.avro", p)
		}
		var c int
		fmt.Sscan(m[4], &c)
		if c >= len(out) || out[c] != "" {
			t.Fatalf("part counters not 0..%d: %v", len(out)-1, parts)
		}
		out[c] = p
	}
	return out
}

// A file whose writer schema the reader's cannot resolve fails the job
// naming the file, with formats.ErrIncompatible.
func TestBulkSourceIncompatibleSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "readings.avro")
	writeOCF(t, path, 10)
	const needsUnit = `{"type":"record","name":"Reading","namespace":"sluice.test","fields":[
		{"name":"sensor","type":"string"},
		{"name":"unit","type":"string"}]}`
	env := asyncTestEnv(stream.WithParallelism(1))
	stream.Collect(file.ReadBulk(env, func(r io.Reader) (file.BulkReader[map[string]any], error) {
		return avro.NewOCFReader[map[string]any](needsUnit, r)
	}, path))
	_, err := env.Execute("incompatible")
	var be *file.BulkReadError
	if !errors.As(err, &be) || be.Path != path || be.Record != 0 || !errors.Is(err, file.ErrUnreadableFile) || !errors.Is(err, formats.ErrIncompatible) {
		t.Fatalf("error %v, want a *file.BulkReadError of %s at record 0, of formats.ErrIncompatible", err, path)
	}
}
