//go:build integration

package sql_test

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/sql"
)

// Integration tests against a real MiniDFSCluster. Run with:
//
//	integration/scripts/with-services.sh go test -race -tags integration -run TestFilesystemOnHDFS ./sql/
//
// (or without the script: the test starts its own mini cluster).
func TestMain(m *testing.M) { os.Exit(minicluster.RunMain(m)) }

// A filesystem table on hdfs:// is written with checkpoints (part files
// committed on HDFS) and read back by a bounded filesystem source.
func TestFilesystemOnHDFS(t *testing.T) {
	c := minicluster.Shared(t)
	hconf, err := hadoop.LoadFromEnvironment(func(k string) string {
		if k == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	r := fs.NewResolver()
	if err := hdfs.Register(r, hdfs.Config{Hadoop: hconf}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	base := fmt.Sprintf("hdfs://%s/tmp/sluice-sql-%d", c.NameNode, time.Now().UnixNano())
	cfg := map[string]string{
		"parallelism.default":              "2",
		"execution.checkpointing.interval": "100 ms",
		"execution.checkpointing.dir":      "file://" + t.TempDir() + "/cp",
	}
	write := fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '400');
CREATE TABLE out (id BIGINT, label STRING) WITH ('connector' = 'filesystem', 'path' = '%s/out', 'format' = 'csv');
INSERT INTO out SELECT id, CONCAT('n ', CAST(id AS STRING)) FROM gen;`, base)
	jobs, err := sql.NewSession(sql.Options{Config: cfg, FileSystems: r}).ExecuteScript(ctxT(t), write)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	fsys, dir, err := r.For(base + "/out")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "part-") {
			parts++
		} else if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("unexpected file %s", path.Join(dir, e.Name()))
		}
	}
	if parts == 0 {
		t.Fatalf("no committed part files in %s", dir)
	}
	read := fmt.Sprintf(`
CREATE TABLE src (id BIGINT, label STRING) WITH ('connector' = 'filesystem', 'path' = '%s/out', 'format' = 'csv');
CREATE TABLE p (id BIGINT, label STRING) WITH ('connector' = 'print');
INSERT INTO p SELECT * FROM src;`, base)
	var out syncBuilder
	jobs, err = sql.NewSession(sql.Options{Config: map[string]string{"parallelism.default": "2"}, FileSystems: r, Stdout: &out}).ExecuteScript(ctxT(t), read)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs[0].Wait(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for id := 1; id <= 400; id++ {
		want = append(want, fmt.Sprintf("+I[%d, n %d]", id, id))
	}
	slices.Sort(want)
	if got := sortedRows(out.String()); !slices.Equal(got, want) {
		t.Errorf("read back %d rows, want %d; first: %v", len(got), len(want), got[:min(3, len(got))])
	}
}
