package core_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/internal/runtime/core"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/keygroup"
	"github.com/sluice/sluice/internal/runtime/task"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/window_job.json")

// TestWindowJobGraph: the core job is the engine's plain-data graph. Two
// builds fingerprint equally (the sources' settings and the sinks' targets
// are closures, not graph data), the graph survives marshalling with its
// fingerprint, and its serialised form is testdata/window_job.json.
func TestWindowJobGraph(t *testing.T) {
	g1, err := windowJob(events(), nil, newCommitted(), newCommitted(), 3).Build("window count", map[string]string{"parallelism.default": "2"})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := windowJob(events()[:3], &pause{at: 1}, newCommitted(), newCommitted(), 3).Build("window count", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g1.Fingerprint() != g2.Fingerprint() {
		t.Fatalf("two builds of the job: fingerprints %s and %s", g1.Fingerprint(), g2.Fingerprint())
	}
	b, err := g1.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := graph.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Fingerprint() != g1.Fingerprint() {
		t.Fatalf("fingerprint after a round trip %s, before %s", back.Fingerprint(), g1.Fingerprint())
	}
	golden := filepath.Join("testdata", "window_job.json")
	if *rewrite {
		if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(b, '\n'), want) {
		t.Errorf("the graph's serialised form changed (go test -rewrite to accept):\n%s", b)
	}

	// A change of the job's structure changes the fingerprint.
	other := windowJob(events(), nil, newCommitted(), newCommitted(), 3)
	g3, err := other.Build("window count", nil)
	if err != nil {
		t.Fatal(err)
	}
	g3.Nodes[1].Props["size"] = "20"
	if g3.Fingerprint() == g1.Fingerprint() {
		t.Fatal("a different window size fingerprints the same")
	}
}

// TestEncodedKeysPlaceAsTypedKeys: a core KeyBy over Bytes records routes
// a record to the key group where the typed API routes the string of its
// bytes, and the keyed state of the core operator files it there too.
func TestEncodedKeysPlaceAsTypedKeys(t *testing.T) {
	b := core.NewBuilder(2, 0)
	src := core.AddSource(b, core.SourceSpec{Out: core.Bytes(), New: func() core.Source { return nil }})
	sink := core.Sink(src.KeyBy(core.BytesKey), core.OperatorSpec{New: func() core.Operator { return nil }})
	g := b.Graph("placement", nil)
	e := g.InEdges(sink.Node().ID)[0]
	if e.Partitioning != graph.Hash || !sink.Node().Keyed {
		t.Fatalf("edge %s, keyed %v: want a hash edge into a keyed operator", e.Partitioning, sink.Node().Keyed)
	}
	kp, ok := e.Partitioner.(task.KeyPartitioner[[]byte])
	if !ok {
		t.Fatalf("partitioner %T is not a key partitioner of byte records", e.Partitioner)
	}
	typed, err := keygroup.NewHasher[string]()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{128, 16, 1} {
		kg := kp.NewKeyGroupFunc(m)
		for _, k := range []string{"", "k1", "user-42", "ünïcode"} {
			if got, want := kg([]byte(k)), typed.KeyGroup(k, m); got != want {
				t.Errorf("key %q, max parallelism %d: core places it in key group %d, the typed API in %d", k, m, got, want)
			}
		}
	}
}

func TestBuildReportsEveryMistake(t *testing.T) {
	b := core.NewBuilder(1, 0)
	src := core.AddSource(b, core.SourceSpec{Name: "no type", New: func() core.Source { return nil }})
	op := core.Transform(src, core.OperatorSpec{Name: "no new", Out: core.Bytes()})
	op.SideOutput("missing")
	src.KeyBy(nil)
	_, err := b.Build("bad", nil)
	be, ok := err.(*core.BuildError)
	if !ok {
		t.Fatalf("error %v (%T), want a *core.BuildError", err, err)
	}
	if len(be.Errs) != 4 {
		t.Fatalf("%d mistakes reported, want 4:\n%v", len(be.Errs), err)
	}
}
