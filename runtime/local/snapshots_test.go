package local

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/internal/runtime/task"
)

// TestSnapshotWriterSharing follows the incremental snapshots of one task
// through the writer: which files each uploads and which handles it
// references. A checkpoint uploads the files not uploaded before; a full
// checkpoint uploads all of them under names of its own, and the
// checkpoints after it reference those; a savepoint copies all of them
// into itself and changes nothing for the checkpoints.
func TestSnapshotWriterSharing(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "local")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &graph.JobGraph{Name: "j", Nodes: []*graph.Node{{ID: 0, Kind: "source", Name: "src", UID: "src", Parallelism: 1}}}
	w := NewSnapshotWriter(g)
	st, err := storage.New(fs.Local{}, filepath.Join(dir, "chk"), "job")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		id    int64
		kind  checkpoint.Kind
		files string // the snapshot's files, comma-separated
		// handles the task file references, by file name (comma-separated
		// name=handle), and the files uploaded
		want     string
		uploaded string
	}{
		{1, checkpoint.Checkpoint, "a,b", "a=../shared/a,b=../shared/b", "a,b"},
		{2, checkpoint.Checkpoint, "a,b,c", "a=../shared/a,b=../shared/b,c=../shared/c", "c"},
		{3, checkpoint.FullCheckpoint, "b,c,d", "b=../shared/full-3-b,c=../shared/full-3-c,d=../shared/full-3-d", "b,c,d"},
		{4, checkpoint.Checkpoint, "c,d,e", "c=../shared/full-3-c,d=../shared/full-3-d,e=../shared/e", "e"},
		{5, checkpoint.Savepoint, "c,e", "c=c,e=e", "c,e"},
		{6, checkpoint.Checkpoint, "c,e,f", "c=../shared/full-3-c,e=../shared/e,f=../shared/f", "f"},
		{7, checkpoint.FullCheckpoint, "f", "f=../shared/full-7-f", "f"},
	} {
		var files []task.LocalFile
		for _, name := range strings.Split(step.files, ",") {
			p := filepath.Join(local, name)
			if err := os.WriteFile(p, []byte("sst "+name), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, task.LocalFile{Name: name, Path: p, Size: int64(len("sst " + name))})
		}
		var loc *storage.Location
		if step.kind.IsSavepoint() {
			loc, err = storage.NewSavepointWriter(fs.Local{}, filepath.Join(dir, "sp"), "job", step.id)
		} else {
			loc, err = st.NewCheckpointWriter(step.id)
		}
		if err != nil {
			t.Fatal(err)
		}
		snap := &task.Snapshot{ID: step.id, Kind: step.kind, Operators: map[graph.NodeID]*task.OperatorSnapshot{
			0: {Files: files, Manifests: [][]byte{[]byte("manifest")}},
		}}
		ack, err := w.Write(loc, checkpoint.TaskID{}, snap)
		if err != nil {
			t.Fatalf("%s %d: %v", step.kind, step.id, err)
		}
		r, err := readTaskFile(loc, ack.Handle)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Operators[w.opIDs[0]].Files
		want := map[string]string{}
		for _, kv := range strings.Split(step.want, ",") {
			k, v, _ := strings.Cut(kv, "=")
			want[k] = v
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %d references %v, want %v", step.kind, step.id, got, want)
		}
		var wantBytes int64
		for _, name := range strings.Split(step.uploaded, ",") {
			wantBytes += int64(len("sst " + name))
		}
		if ack.Bytes-int64(len(taskCodec.Append(nil, r))) != wantBytes {
			t.Errorf("%s %d uploaded %d bytes of files, want %d (%s)", step.kind, step.id, ack.Bytes-int64(len(taskCodec.Append(nil, r))), wantBytes, step.uploaded)
		}
		for name, h := range got {
			p, err := storage.ResolveHandle(loc.MetadataPath(), h)
			if err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(p); err != nil || string(data) != "sst "+name {
				t.Errorf("%s %d: %s at %s: %q, %v", step.kind, step.id, name, p, data, err)
			}
		}
	}
}

func readTaskFile(loc *storage.Location, handle string) (taskFile, error) {
	p, err := storage.ResolveHandle(loc.MetadataPath(), handle)
	if err != nil {
		return taskFile{}, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return taskFile{}, err
	}
	tf, _, err := taskCodec.Decode(data)
	return tf, err
}
