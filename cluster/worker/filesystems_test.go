package worker

import (
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/fs/memfs"
)

func TestRegisterHDFS(t *testing.T) {
	noEnv := func(string) string { return "" }
	t.Run("registers hdfs on a local-only resolver", func(t *testing.T) {
		r := fs.NewResolver()
		if err := registerHDFS(r, noEnv); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.Schemes(), "hdfs") {
			t.Fatalf("schemes %v lack hdfs", r.Schemes())
		}
		// Without a Hadoop configuration an hdfs:/// URI names no NameNode:
		// the error says so rather than "unknown scheme".
		if _, _, err := r.For("hdfs:///ckp"); err == nil || errors.Is(err, fs.ErrUnknownScheme) {
			t.Fatalf("hdfs:///ckp without fs.defaultFS: got %v, want an error other than ErrUnknownScheme", err)
		}
	})
	t.Run("keeps the program's own hdfs", func(t *testing.T) {
		r := fs.NewResolver()
		mem := memfs.New()
		if err := r.Register("hdfs", func(*url.URL) (fs.FileSystem, error) { return mem, nil }); err != nil {
			t.Fatal(err)
		}
		if err := registerHDFS(r, noEnv); err != nil {
			t.Fatal(err)
		}
		got, _, err := r.For("hdfs://nn:8020/ckp")
		if err != nil || got != fs.FileSystem(mem) {
			t.Fatalf("For: %v, %v; want the program's filesystem", got, err)
		}
	})
	t.Run("a missing HADOOP_CONF_DIR is an error", func(t *testing.T) {
		env := func(k string) string {
			if k == "HADOOP_CONF_DIR" {
				return t.TempDir() + "/missing"
			}
			return ""
		}
		if err := registerHDFS(fs.NewResolver(), env); err == nil {
			t.Fatal("no error for a HADOOP_CONF_DIR that does not exist")
		}
	})
}
