//go:build integration

package hdfs_test

import (
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"strings"
	"testing"

	colinmarc "github.com/colinmarc/hdfs/v2"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/security/kerberos"
)

func secureLogin(t *testing.T, c *minicluster.Cluster) *kerberos.Login {
	t.Helper()
	k := c.Kerberos
	l, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestKerberosHDFS writes and reads a file on the secure MiniDFSCluster: Kerberos to the
// NameNode, SASL with the block token to the DataNode (dfs.data.transfer.protection
// privacy, encrypted with AES), and the NameNode knows us as the principal's short name.
func TestKerberosHDFS(t *testing.T) {
	c := minicluster.SharedSecure(t)
	login := secureLogin(t, c)
	r := fs.NewResolver()
	defer r.Close()
	if err := hdfs.Register(r, hdfs.Config{Hadoop: clusterConf(t, c), Kerberos: login}); err != nil {
		t.Fatal(err)
	}
	fsys, p, err := r.For("hdfs:///user/sluice/kerberos-test/data")
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll("/user/sluice/kerberos-test"); err != nil {
		t.Fatal(err)
	}
	// The superuser's directory is not ours.
	if err := fsys.MkdirAll("/kerberos-test-denied"); !errors.Is(err, iofs.ErrPermission) {
		t.Errorf("mkdir at the root as sluice: %v, want ErrPermission", err)
	}
	data := bytes.Repeat([]byte("kerberized bytes "), 64<<10) // > 1 MB: several packets
	w, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rd)
	rd.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), wrote %d", len(got), err, len(data))
	}
	fi, err := fsys.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	hfi, ok := fi.(*colinmarc.FileInfo)
	if !ok {
		t.Fatalf("Stat gave a %T", fi)
	}
	if owner := hfi.Owner(); owner != "sluice" {
		t.Errorf("file owned by %q, want the principal's short name sluice", owner)
	}
}

func TestKerberosHDFSFailures(t *testing.T) {
	c := minicluster.SharedSecure(t)
	login := secureLogin(t, c)
	conf := clusterConf(t, c)

	if _, err := hdfs.OptionsFor(hdfs.Config{Hadoop: conf}, ""); !errors.Is(err, hdfs.ErrNoKerberosLogin) || !strings.Contains(err.Error(), "core-site.xml") {
		t.Errorf("no login: %v, want ErrNoKerberosLogin naming core-site.xml", err)
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: conf, Kerberos: login}, "")
	if err != nil {
		t.Fatal(err)
	}
	if o.DataTransferProtection != c.Kerberos.DataTransferProtection || o.NameNodePrincipal != "hdfs/_HOST@"+c.Kerberos.Realm || o.User != "sluice" {
		t.Errorf("options %+v", o)
	}
	o.NameNodePrincipal = "nn/_HOST@" + c.Kerberos.Realm
	_, err = hdfs.Dial(o)
	if !errors.Is(err, kerberos.ErrServerPrincipal) || !strings.Contains(err.Error(), "dfs.namenode.kerberos.principal") {
		t.Fatalf("a NameNode principal unknown to the KDC: %v, want ErrServerPrincipal naming dfs.namenode.kerberos.principal", err)
	}
	t.Log(err)
}
