//go:build integration

package hdfs_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"testing"

	colinmarc "github.com/colinmarc/hdfs/v2"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/fstest"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

// Integration tests against a real MiniDFSCluster (see
// integration/minicluster). Run with: go test -tags integration -race ./hdfs/

func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

// clusterConf is the client configuration the harness wrote, read the way
// the Sluice CLI reads HADOOP_CONF_DIR.
func clusterConf(t *testing.T, c *minicluster.Cluster) *hadoop.Configuration {
	t.Helper()
	conf, err := hadoop.LoadFromEnvironment(func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// dialAs connects to the cluster as user, configured from its conf dir.
func dialAs(t *testing.T, c *minicluster.Cluster, user string) *hdfs.FileSystem {
	t.Helper()
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: clusterConf(t, c), User: user}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Addresses) != 1 || o.Addresses[0] != c.NameNode {
		t.Fatalf("configuration gives NameNodes %v, harness says %s", o.Addresses, c.NameNode)
	}
	f, err := hdfs.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// scratch makes a fresh directory under /tmp (mode 1777 on the cluster),
// owned by fsys's user.
func scratch(t *testing.T, fsys fs.FileSystem) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	dir := "/tmp/sluice-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-") + "-" + hex.EncodeToString(b)
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.RemoveAll(dir) })
	return dir
}

// The test users are not the cluster's superuser (the user that started
// the NameNode), so permissions apply to them.
const alice, bob = "sluice-alice", "sluice-bob"

func TestConformance(t *testing.T) {
	c := minicluster.Shared(t)
	f := dialAs(t, c, alice)
	fstest.Run(t, f, scratch(t, f))
}

// TestRenameNeverReplaces verifies what HDFS does: colinmarc/hdfs renames
// with rename2(OVERWRITE), which replaces an existing file, while our
// Rename refuses with fs.ErrExist and leaves both files as they were.
func TestRenameNeverReplaces(t *testing.T) {
	c := minicluster.Shared(t)
	f := dialAs(t, c, alice)
	dir := scratch(t, f)
	src, dst := path.Join(dir, "src"), path.Join(dir, "dst")
	write := func(p, s string) {
		t.Helper()
		if err := fstest.WriteFile(f, p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write(src, "new")
	write(dst, "old")
	err := f.Rename(src, dst)
	var le *os.LinkError
	if !errors.Is(err, iofs.ErrExist) || !errors.As(err, &le) || le.New != dst {
		t.Fatalf("Rename onto an existing file: %v; want fs.ErrExist naming %s", err, dst)
	}
	if b, _ := fstest.ReadFile(f, dst); string(b) != "old" {
		t.Fatalf("dst holds %q after a refused Rename", b)
	}

	raw, err := colinmarc.NewClient(colinmarc.ClientOptions{Addresses: []string{c.NameNode}, User: alice})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Rename(src, dst); err != nil {
		t.Fatalf("colinmarc Rename: %v", err)
	}
	if b, _ := fstest.ReadFile(f, dst); string(b) != "new" {
		t.Fatalf("colinmarc's Rename did not replace dst (it holds %q): the check in hdfs.Rename may be unneeded", b)
	}
	t.Log("confirmed: HDFS rename2 as colinmarc/hdfs calls it replaces an existing destination; hdfs.FileSystem.Rename does not")
}

// TestPermissionDenied: another user cannot write into alice's directory;
// the error matches fs.ErrPermission and names the path.
func TestPermissionDenied(t *testing.T) {
	c := minicluster.Shared(t)
	a := dialAs(t, c, alice)
	b := dialAs(t, c, bob)
	dir := path.Join(scratch(t, a), "private")
	if err := a.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	file := path.Join(dir, "f")
	if err := fstest.WriteFile(a, file, []byte("alice's")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		err    error
		naming string
	}{
		{"create", func() error { _, err := b.Create(path.Join(dir, "g")); return err }(), path.Join(dir, "g")},
		{"mkdir", b.MkdirAll(path.Join(dir, "sub")), path.Join(dir, "sub")},
		{"remove", b.Remove(file), file},
		{"removeall", b.RemoveAll(dir), dir},
		{"rename out", b.Rename(file, path.Join(path.Dir(dir), "stolen")), file},
	}
	for _, tt := range tests {
		t.Logf("%s as %s: %v", tt.name, bob, tt.err)
		switch {
		case !errors.Is(tt.err, iofs.ErrPermission):
			t.Errorf("%s as %s: %v; want fs.ErrPermission", tt.name, bob, tt.err)
		case !strings.Contains(tt.err.Error(), tt.naming) || !strings.Contains(tt.err.Error(), bob):
			t.Errorf("%s: %q does not name %s and the user %s", tt.name, tt.err, tt.naming, bob)
		}
	}
	// Reading is allowed (0644 files, 0755 directories), and nothing changed.
	if got, err := fstest.ReadFile(b, file); err != nil || string(got) != "alice's" {
		t.Errorf("bob reads %q, %v", got, err)
	}
	infos, err := a.ReadDir(dir)
	if err != nil || len(infos) != 1 {
		t.Errorf("alice's directory holds %d entries, %v", len(infos), err)
	}
}

// TestResolver resolves hdfs:///path (fs.defaultFS) and
// hdfs://host:port/path through a Resolver, writes through one and reads
// through the other.
func TestResolver(t *testing.T) {
	c := minicluster.Shared(t)
	r := fs.NewResolver()
	defer func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := hdfs.Register(r, hdfs.Config{Hadoop: clusterConf(t, c), User: alice}); err != nil {
		t.Fatal(err)
	}
	viaDefault, p1, err := r.For("hdfs:///tmp")
	if err != nil {
		t.Fatal(err)
	}
	dir := scratch(t, viaDefault)
	viaHost, p2, err := r.For("hdfs://" + c.NameNode + dir + "/f")
	if err != nil {
		t.Fatal(err)
	}
	if p1 != "/tmp" || p2 != dir+"/f" {
		t.Errorf("paths %q %q", p1, p2)
	}
	if f, ok := viaHost.(*hdfs.FileSystem); !ok || f.User() != alice {
		t.Fatalf("resolved %T", viaHost)
	}
	if err := fstest.WriteFile(viaHost, p2, []byte("through the host")); err != nil {
		t.Fatal(err)
	}
	if b, err := fstest.ReadFile(viaDefault, p2); err != nil || string(b) != "through the host" {
		t.Fatalf("read through fs.defaultFS: %q, %v", b, err)
	}
	if _, _, err := r.For("hdfs://127.0.0.1:1/x"); err == nil || !strings.Contains(err.Error(), "hdfs://127.0.0.1:1/x") {
		t.Errorf("a NameNode that is not there: %v", err)
	}
}

// TestCheckpointStorage runs checkpoint and savepoint storage on HDFS:
// incremental checkpoints, a half-written one, corrupt metadata and
// fallback, retention with shared files, and a savepoint that is moved and
// restored.
func TestCheckpointStorage(t *testing.T) {
	c := minicluster.Shared(t)
	f := dialAs(t, c, alice)
	root := scratch(t, f)
	const job = "0123456789abcdef0123456789abcdef"
	s, err := storage.New(f, path.Join(root, "checkpoints"), job)
	if err != nil {
		t.Fatal(err)
	}
	complete := func(id int64, shared ...string) {
		t.Helper()
		loc, err := s.NewCheckpointWriter(id)
		if err != nil {
			t.Fatal(err)
		}
		w, h, err := loc.CreateFile("op-1")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "state of %d", id)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var handles []string
		for _, name := range shared {
			w, sh, err := loc.CreateSharedFile(name)
			if errors.Is(err, iofs.ErrExist) {
				handles = append(handles, "../shared/"+name)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(w, "sst %s", name)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			handles = append(handles, sh)
		}
		if _, err := loc.WriteMetadata([]byte(h), handles); err != nil {
			t.Fatal(err)
		}
	}
	complete(1, "sst-1", "sst-2")
	complete(2, "sst-2", "sst-3")
	complete(3, "sst-3", "sst-4")

	// A checkpoint whose coordinator died before publishing its metadata.
	loc, err := s.NewCheckpointWriter(4)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := loc.CreateFile("op-1")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := fstest.WriteFile(f, path.Join(loc.Dir(), "_metadata.inprogress.dead"), []byte("half")); err != nil {
		t.Fatal(err)
	}

	accept := func(c storage.Checkpoint) error { return s.CheckFiles(c, string(c.Metadata.Payload)) }
	latest, skipped, err := s.LatestCompleted(accept)
	if err != nil || latest.ID != 3 || len(skipped) != 0 {
		t.Fatalf("LatestCompleted = %d, %v, %v; want 3", latest.ID, skipped, err)
	}

	// Damage checkpoint 3's metadata: fall back to 2, naming the file.
	meta3 := path.Join(s.CheckpointDir(3), storage.MetadataFileName)
	data, err := fstest.ReadFile(f, meta3)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(meta3); err != nil {
		t.Fatal(err)
	}
	if err := fstest.WriteFile(f, meta3, data[:len(data)-3]); err != nil {
		t.Fatal(err)
	}
	latest, skipped, err = s.LatestCompleted(accept)
	if err != nil || latest.ID != 2 {
		t.Fatalf("LatestCompleted = %d, %v; want 2", latest.ID, err)
	}
	var ce *storage.CorruptError
	if len(skipped) != 1 || !errors.As(skipped[0], &ce) || ce.Path != meta3 {
		t.Fatalf("skipped %v; want a *CorruptError naming %s", skipped, meta3)
	}
	// And to 1 when a shared file of 2 is missing.
	if err := f.Remove(path.Join(s.SharedDir(), "sst-3")); err != nil {
		t.Fatal(err)
	}
	latest, skipped, err = s.LatestCompleted(accept)
	if err != nil || latest.ID != 1 || len(skipped) != 2 || !errors.Is(skipped[1], iofs.ErrNotExist) {
		t.Fatalf("LatestCompleted = %d, %v, %v; want 1", latest.ID, skipped, err)
	}

	// Retention: keep 1 valid checkpoint (5); 1 and 2 go with their shared
	// files (sst-3 was removed above), corrupt 3 goes (older than 5),
	// incomplete 4 stays.
	complete(5, "sst-4", "sst-5")
	cl, err := s.Retain(1)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cl.Discarded) != "[1 2 3]" || fmt.Sprint(cl.Shared) != "[../shared/sst-1 ../shared/sst-2 ../shared/sst-3]" {
		t.Errorf("Retain(1) = %+v", cl)
	}
	var left []string
	for _, d := range []string{s.JobDir(), s.SharedDir()} {
		infos, err := f.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, fi := range infos {
			left = append(left, fi.Name())
		}
	}
	if got := strings.Join(left, " "); got != "chk-4 chk-5 shared taskowned sst-4 sst-5" {
		t.Errorf("after retention: %s", got)
	}
	if got, err := s.DiscardIncomplete(5); err != nil || fmt.Sprint(got) != "[4]" {
		t.Errorf("DiscardIncomplete(5) = %v, %v", got, err)
	}

	// A savepoint, moved and restored.
	sp, err := storage.NewSavepointWriter(f, path.Join(root, "savepoints"), job, 5)
	if err != nil {
		t.Fatal(err)
	}
	w, h, err := sp.CreateFile("op-1")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("savepoint state"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.WriteMetadata([]byte(h), nil); err != nil {
		t.Fatal(err)
	}
	moved := path.Join(root, "moved-savepoint")
	if err := f.Rename(sp.Dir(), moved); err != nil {
		t.Fatal(err)
	}
	meta, err := storage.Resolve(f, moved)
	if err != nil {
		t.Fatal(err)
	}
	m, err := storage.ReadMetadata(f, meta)
	if err != nil || m.Kind != storage.KindSavepoint || m.CheckpointID != 5 {
		t.Fatalf("savepoint metadata %+v, %v", m, err)
	}
	p, _ := storage.ResolveHandle(meta, string(m.Payload))
	if b, err := fstest.ReadFile(f, p); err != nil || string(b) != "savepoint state" {
		t.Fatalf("savepoint file %s: %q, %v", p, b, err)
	}
	if err := storage.DisposeSavepoint(f, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(moved); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("disposed savepoint: %v", err)
	}
}

// TestMkdirMode: Mkdir creates a directory with the given permissions, which
// keep other users out; an existing directory is fs.ErrExist.
func TestMkdirMode(t *testing.T) {
	c := minicluster.Shared(t)
	f := dialAs(t, c, alice)
	dir := path.Join(scratch(t, f), "private")
	if err := f.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v, want drwx------", fi.Mode())
	}
	if err := f.Mkdir(dir, 0o700); !errors.Is(err, iofs.ErrExist) {
		t.Errorf("Mkdir of an existing directory: %v, want fs.ErrExist", err)
	}
	if err := fstest.WriteFile(f, path.Join(dir, "secret"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	other := dialAs(t, c, bob)
	if _, err := other.ReadDir(dir); !errors.Is(err, iofs.ErrPermission) {
		t.Errorf("another user listed a 0700 directory: %v", err)
	}
}
