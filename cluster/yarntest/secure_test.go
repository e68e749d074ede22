//go:build integration

package yarntest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	iofs "io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
)

// newSecureRig is newRig on the secure cluster: the test's HDFS client
// logs in with the client principal's keytab, and the test's HDFS
// directory is in that user's home.
func newSecureRig(t *testing.T) (*rig, *minicluster.Kerberos) {
	t.Helper()
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	h, err := hadoop.LoadFromEnvironment(func(key string) string {
		if key == "HADOOP_CONF_DIR" {
			return c.ConfDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: h, Kerberos: login}, "")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	dir := path.Join("/user", shortName(k.Principal), "yarntest-"+hex.EncodeToString(b))
	t.Cleanup(func() {
		fsys.RemoveAll(dir)
		fsys.Close()
		login.Close()
	})
	return &rig{c: c, fs: fsys, work: t.TempDir(), hdfs: dir, login: login}, k
}

func shortName(principal string) string {
	n, _, _ := strings.Cut(principal, "@")
	n, _, _ = strings.Cut(n, "/")
	return n
}

var reSubmitting = regexp.MustCompile(`Submitting (application_\d+_\d+) `)

// kerberosArgs give the CLI the client principal's login.
func kerberosArgs(k *minicluster.Kerberos) []string {
	return []string{"-Dsecurity.kerberos.login.keytab=" + k.Keytab, "-Dsecurity.kerberos.login.principal=" + k.Principal,
		"-Dsecurity.kerberos.krb5-conf.path=" + k.Krb5Conf}
}

// TestSecureApplicationMode: sluice run --target yarn-application on the
// Kerberized cluster. The client logs in from the keytab, submits over
// Kerberos with HDFS delegation tokens and ships the keytab (mode 600 in a
// staging directory of mode 700); the ApplicationMaster, the TaskManagers
// and the workers log in from the shipped keytab; the job checkpoints to
// hdfs:// on the secure cluster and its output is exactly once; the
// application ends SUCCEEDED; the TaskManagers' credentials hold the HDFS
// delegation token but no AMRMToken.
func TestSecureApplicationMode(t *testing.T) {
	r, k := newSecureRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := r.hdfs + "/out"
	const n, keys = 6000, 6
	args := append([]string{"run", "--target", "yarn-application", "-p", "2",
		"-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt", "-Dyarn.application.name=yarntest-secure"}, small...)
	args = append(args, checkpointed...)
	args = append(args, kerberosArgs(k)...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "2000")

	p := r.start(ctx, args...)
	// Checked while the staging directory exists, before the application
	// runs (the CLI prints "Application id" once it does).
	appID := match(t, p, reSubmitting, 2*time.Minute)
	staging := path.Join("/user", shortName(k.Principal), ".sluice", appID)
	// The staging directory lives until the application ends: its keytab
	// must be readable by its owner only.
	if fi, err := r.fs.Stat(path.Join(staging, "krb5.keytab")); err != nil {
		t.Errorf("the shipped keytab: %v", err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the shipped keytab has mode %v, want no access for group and others", fi.Mode().Perm())
	}
	if fi, err := r.fs.Stat(staging); err != nil {
		t.Errorf("the staging directory: %v", err)
	} else if fi.Mode().Perm() != 0o700 {
		t.Errorf("the staging directory has mode %v, want 700", fi.Mode().Perm())
	}
	// The workers checkpoint to the secure HDFS with their own logins (a
	// checkpoint completes once every worker has uploaded its state).
	addr := match(t, p, reREST, 2*time.Minute)
	rc, err := restclient.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	job := runningJob(t, ctx, rc, 2*time.Minute)
	testwait.Eventually(t, time.Minute, "a completed checkpoint on the secure HDFS", func() bool { return hasCompletedCheckpoint(ctx, rc, job) })
	succeeded(t, p, appID)
	if !strings.Contains(p.out.String(), "Obtained an HDFS delegation token") {
		t.Errorf("the client did not report obtaining an HDFS delegation token")
	}
	checkExactlyOnce(t, r.fs, out, n, keys)
	testwait.Eventually(t, 30*time.Second, "the staging directory "+staging+" to be deleted", func() bool {
		_, err := r.fs.Stat(staging)
		return errors.Is(err, iofs.ErrNotExist)
	})

	// The TaskManagers log (to taskmanager.log in the container's log
	// directory) the kinds of the tokens their containers hold.
	logs := containerLogs(t, r.c, appID, "taskmanager.log")
	if len(logs) == 0 {
		t.Fatalf("no TaskManager logs of %s under the cluster's work directory", appID)
	}
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		line := grepLine(string(b), "container credentials")
		if line == "" {
			t.Errorf("%s does not log the container's credentials", f)
			continue
		}
		if strings.Contains(line, hadoop.KindAMRMToken) || !strings.Contains(line, "HDFS_DELEGATION_TOKEN") {
			t.Errorf("a TaskManager's credentials: %s; want an HDFS delegation token and no %s", line, hadoop.KindAMRMToken)
		}
		if !strings.Contains(string(b), "kerberos: logged in") {
			t.Errorf("%s: the TaskManager did not log in from the keytab", f)
		}
	}
	if am := containerLogs(t, r.c, appID, "jobmanager.log"); len(am) > 0 {
		b, _ := os.ReadFile(am[0])
		for _, want := range []string{"kerberos: logged in", "delegation: obtained tokens"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("the ApplicationMaster's log lacks %q", want)
			}
		}
	} else {
		t.Errorf("no ApplicationMaster log of %s", appID)
	}
}

// containerLogs finds the files called name in the log directories of the
// application's containers, under the mini cluster's work directory.
func containerLogs(t *testing.T, c *minicluster.Cluster, appID, name string) []string {
	t.Helper()
	root := c.Fields[minicluster.KeyWorkDir]
	if root == "" {
		t.Fatalf("the cluster's READY names no %s", minicluster.KeyWorkDir)
	}
	var found []string
	filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name && strings.Contains(p, appID) && strings.Contains(p, "log") {
			found = append(found, p)
		}
		return nil
	})
	return found
}

func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestSecureSession: sluice yarn-session on the Kerberized cluster. The
// session is started, attached to, listed and stopped by CLIs that log in
// from the client's keytab (the ResourceManager is reached over
// Kerberos); a job submitted to it runs in TaskManager containers that
// log in from the shipped keytab, checkpoints to the secure HDFS, and a
// savepoint of it lands there; it is cancelled; after the session stops
// no container is left and the staging directory with its keytab is gone.
func TestSecureSession(t *testing.T) {
	r, k := newSecureRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	krb := kerberosArgs(k)
	o, err := r.sluice(t, ctx, append(append([]string{"yarn-session", "-Dyarn.application.name=yarntest-secure-session"}, small...), krb...)...)
	if err != nil {
		t.Fatalf("sluice yarn-session on the secure cluster: %v", err)
	}
	m := reAppID.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("no application id printed")
	}
	appID := m[1]
	session := append([]string{"--target", "yarn-session", "-Dyarn.application.id=" + appID}, krb...)
	stopped := false
	defer func() {
		if !stopped {
			r.sluice(t, context.Background(), append([]string{"yarn-session", "--stop", "-Dyarn.application.id=" + appID}, krb...)...)
		}
	}()
	checkIdentity(t, report(t, ctx, yc, appID), "Sluice", "yarntest-secure-session", "default", nil)

	args := append([]string{"run", "--detached", "-p", "2", "-Dexecution.checkpointing.dir=hdfs://" + r.hdfs + "/ckpt"}, session...)
	args = append(args, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+r.hdfs+"/out", "-n", "6000", "-keys", "2", "-rate", "100")
	o, err = r.sluice(t, ctx, args...)
	if err != nil {
		t.Fatalf("sluice run --detached on the secure session: %v", err)
	}
	m = reJobID.FindStringSubmatch(o)
	if m == nil {
		t.Fatal("no job id printed")
	}
	job := m[1]
	testwait.Eventually(t, 2*time.Minute, "list to show the job RUNNING", func() bool {
		o, err := r.start(ctx, append([]string{"list"}, session...)...).wait()
		return err == nil && listed(o, job, "RUNNING")
	})
	testwait.Eventually(t, time.Minute, "a completed checkpoint on the secure HDFS", func() bool {
		return len(r.hdfsCheckpoints(path.Join(r.hdfs, "ckpt"))) > 0
	})
	o, err = r.sluice(t, ctx, append(append([]string{"savepoint"}, session...), job, "hdfs://"+r.hdfs+"/savepoints")...)
	if err != nil {
		t.Fatalf("sluice savepoint on the secure session: %v", err)
	}
	if m := reSavepoint.FindStringSubmatch(o); m == nil {
		t.Error("savepoint: no path printed")
	} else if u, err := url.Parse(m[1]); err != nil || u.Scheme != "hdfs" {
		t.Errorf("savepoint path %q (%v): want an hdfs:// URI", m[1], err)
	} else if _, err := r.fs.Stat(path.Join(u.Path, "_metadata")); err != nil {
		t.Errorf("the savepoint's metadata on the secure HDFS: %v", err)
	}
	if o, err := r.sluice(t, ctx, append(append([]string{"cancel"}, session...), job)...); err != nil || !strings.Contains(o, "Cancelled job "+job) {
		t.Fatalf("sluice cancel %s: %v", job, err)
	}
	if _, err := r.sluice(t, ctx, append([]string{"yarn-session", "--stop", "-Dyarn.application.id=" + appID}, krb...)...); err != nil {
		t.Fatalf("sluice yarn-session --stop on the secure cluster: %v", err)
	}
	stopped = true
	if rep := report(t, ctx, yc, appID); rep.FinalStatus != yarn.FinalSucceeded {
		t.Errorf("the stopped session ended %s, final status %s (%s); want SUCCEEDED", rep.State, rep.FinalStatus, rep.Diagnostics)
	}
	r.stagingGone(t, appID)
	noContainersLeft(t, ctx, yc, appID)
	for _, f := range containerLogs(t, r.c, appID, "taskmanager.log") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "kerberos: logged in") {
			t.Errorf("%s: the TaskManager did not log in from the keytab", f)
		}
	}
}

// TestSecureTicketCacheDeploymentRefused: a client logged in from a ticket
// cache (as after kinit) and no keytab cannot give the containers a login:
// run --target yarn-application is refused before anything is uploaded or
// submitted, naming the keys to set, and no staging directory is made.
func TestSecureTicketCacheDeploymentRefused(t *testing.T) {
	r, k := newSecureRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ccache := filepath.Join(t.TempDir(), "krb5cc")
	if err := r.login.WriteTicketCache(ccache); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5CCNAME", "FILE:"+ccache)
	before := r.stagingDirs(t, shortName(k.Principal))
	args := append([]string{"run", "--target", "yarn-application", "-Dsecurity.kerberos.login.use-ticket-cache=true",
		"-Dsecurity.kerberos.login.principal=" + k.Principal, "-Dsecurity.kerberos.krb5-conf.path=" + k.Krb5Conf}, small...)
	args = append(args, bins.job, "-out", "hdfs://"+r.hdfs+"/out", "-n", "10")
	out, err := r.sluice(t, ctx, args...)
	if err == nil {
		t.Fatalf("a ticket-cache-only deployment succeeded:\n%s", out)
	}
	for _, want := range []string{"has no keytab", "security.kerberos.login.keytab", "nothing was uploaded"} {
		if !strings.Contains(out, want) {
			t.Errorf("the CLI's output does not say %q", want)
		}
	}
	if strings.Contains(out, "Deploying Sluice application") || strings.Contains(out, "Uploaded") {
		t.Errorf("the refused deployment got as far as deploying or uploading:\n%s", out)
	}
	if after := r.stagingDirs(t, shortName(k.Principal)); !slices.Equal(before, after) {
		t.Errorf("staging directories before %v, after %v", before, after)
	}
}

// stagingDirs lists the user's application staging directories.
func (r *rig) stagingDirs(t *testing.T, user string) []string {
	t.Helper()
	fis, err := r.fs.ReadDir(path.Join("/user", user, ".sluice"))
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, fi := range fis {
		out = append(out, fi.Name())
	}
	return out
}

// TestSecureClientConfByIPAddress: a client configuration naming the
// NameNode and the ResourceManager by IP address, with _HOST in their
// principals, works as it does for Hadoop's clients, which put the
// canonical (reverse-resolved) host name of the address they dial for
// _HOST: HDFS lists the user's home and the ResourceManager answers over
// Kerberos. (The secure clusters' principals name hosts: localhost on the
// minicluster, master on the docker cluster.)
func TestSecureClientConfByIPAddress(t *testing.T) {
	c := minicluster.SharedSecure(t)
	k := c.Kerberos
	dir := t.TempDir()
	var repl []string
	for _, addr := range []string{c.NameNode, c.ResourceManager} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		ips, err := net.LookupIP(host)
		if err != nil {
			t.Fatalf("resolving %s: %v", host, err)
		}
		i := slices.IndexFunc(ips, func(ip net.IP) bool { return ip.To4() != nil })
		if i < 0 {
			t.Fatalf("%s has no IPv4 address: %v", host, ips)
		}
		repl = append(repl, host+":", ips[i].String()+":", "<value>"+host+"</value>", "<value>"+ips[i].String()+"</value>")
	}
	r := strings.NewReplacer(repl...)
	for _, name := range []string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml"} {
		b, err := os.ReadFile(filepath.Join(c.ConfDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(r.Replace(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := hadoop.LoadFromEnvironment(func(key string) string {
		if key == "HADOOP_CONF_DIR" {
			return dir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fs.defaultFS %s, the ResourceManager at %s", h.Get("fs.defaultFS", ""), h.Get("yarn.resourcemanager.address", ""))
	login, err := kerberos.New(kerberos.Config{Principal: k.Principal, Keytab: k.Keytab, Krb5Conf: k.Krb5Conf})
	if err != nil {
		t.Fatal(err)
	}
	defer login.Close()
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: h, Kerberos: login}, "")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		t.Fatalf("HDFS by IP address: %v", err)
	}
	defer fsys.Close()
	if _, err := fsys.ReadDir(path.Join("/user", shortName(k.Principal))); err != nil {
		t.Errorf("listing the user's home on HDFS by IP address: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc := &rig{c: &minicluster.Cluster{ConfDir: dir}, login: login}
	if _, err := rc.yarnClient(t).GetClusterMetrics(ctx); err != nil {
		t.Errorf("the ResourceManager by IP address: %v", err)
	}
}
