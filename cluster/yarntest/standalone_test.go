//go:build integration

package yarntest

import (
	"context"
	"io"
	iofs "io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// freePorts are n distinct loopback ports nobody listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close() // held until all are chosen: no port twice
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestStandaloneClusterOnSecureHDFS: a standalone cluster (sluice
// jobmanager, two sluice taskmanager processes, not on YARN) whose
// Hadoop configuration is the Kerberized cluster's: every process logs in
// from the keytab its configuration names; the JobManager keeps its HA
// metadata and the job's checkpoint metadata on the secure HDFS, the
// workers their state. The JobManager is killed mid-job; its successor
// recovers the job from the HA store on HDFS and the output is exactly
// once. GET /metrics shows the logins of the JobManager, the TaskManagers
// and the workers.
func TestStandaloneClusterOnSecureHDFS(t *testing.T) {
	r, k := newSecureRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const host = "127.0.0.1"
	ports := freePorts(t, 2)
	rpcPort, restPort := ports[0], ports[1]
	rest := net.JoinHostPort(host, strconv.Itoa(restPort))
	krb := kerberosArgs(k)
	jmArgs := append([]string{"jobmanager", "-Djobmanager.rpc.address=" + host, "-Djobmanager.rpc.port=" + strconv.Itoa(rpcPort),
		"-Drest.address=" + host, "-Drest.bind-address=" + host, "-Drest.port=" + strconv.Itoa(restPort),
		"-Dhigh-availability.type=FILESYSTEM", "-Dhigh-availability.storageDir=hdfs://" + path.Join(r.hdfs, "ha")}, krb...)
	var procs []context.CancelFunc
	var logs []*run
	startProc := func(args ...string) (*run, context.CancelFunc) {
		pctx, stop := context.WithCancel(ctx)
		p := r.start(pctx, args...)
		procs = append(procs, stop)
		logs = append(logs, p)
		return p, stop
	}
	defer func() {
		for _, stop := range procs {
			stop()
		}
		for _, p := range logs {
			<-p.done
		}
		if t.Failed() {
			for i, p := range logs {
				t.Logf("---- process %d, last lines:\n%s", i, lastLines(p.out.String(), 30))
			}
		}
	}()
	jm, killJM := startProc(jmArgs...)
	for i := 0; i < 2; i++ {
		startProc(append([]string{"taskmanager", "-Djobmanager.rpc.address=" + host, "-Djobmanager.rpc.port=" + strconv.Itoa(rpcPort),
			"-Dtaskmanager.numberOfTaskSlots=1", "-Dtaskmanager.host=" + host,
			"-Dprocess.taskmanager.working-dir=" + filepath.Join(r.work, "tm"+strconv.Itoa(i))}, krb...)...)
	}
	testwait.Eventually(t, time.Minute, "two TaskManagers registered", func() bool {
		b, err := httpGet(ctx, "http://"+rest+"/taskmanagers")
		return err == nil && strings.Count(b, `"slotsNumber"`) == 2
	})

	out := path.Join(r.hdfs, "out")
	const n, keys = 16000, 4
	args := append([]string{"run", "-m", rest, "-p", "2", "-Dexecution.checkpointing.dir=hdfs://" + path.Join(r.hdfs, "ckpt")}, checkpointed...)
	args = append(args, bins.job, "-out", "hdfs://"+out, "-n", strconv.Itoa(n), "-keys", strconv.Itoa(keys), "-rate", "1000")
	client := r.start(ctx, args...)
	testwait.Eventually(t, time.Minute, "a completed checkpoint on the secure HDFS", func() bool {
		return len(r.hdfsCheckpoints(path.Join(r.hdfs, "ckpt"))) > 0
	})

	// The HA store on HDFS (the job's record with its arguments, its graph,
	// its binary) is its owner's alone: directories 0700, files 0600.
	if files := r.checkPrivateTree(t, path.Join(r.hdfs, "ha")); files < 3 {
		t.Errorf("the HA store on HDFS holds %d files; want the job's record, graph and binary", files)
	}

	// Every process reports its login (workers with their metrics
	// reports, TaskManagers with their heartbeats).
	var missing []string
	testwait.Eventually(t, 30*time.Second, "GET /metrics to show the Kerberos logins of every process", func() bool {
		m, err := httpGet(ctx, "http://"+rest+"/metrics")
		if err != nil {
			return false
		}
		missing = missing[:0]
		for _, c := range []string{"jobmanager", "taskmanager", "worker"} {
			if !strings.Contains(m, `sluice_kerberos_tgt_expiry_timestamp_seconds{component="`+c+`"`) {
				missing = append(missing, c)
			}
			// Every process runs on this machine: each names it alike.
			for _, l := range regexp.MustCompile(`sluice_kerberos_tgt_expiry_timestamp_seconds\{component="`+c+`"[^}]*\}`).FindAllString(m, -1) {
				if host, _ := os.Hostname(); !strings.Contains(l, `host="`+host+`"`) {
					t.Errorf("host label of %s is not the machine's name %q: %s", c, host, l)
				}
			}
		}
		return len(missing) == 0
	})

	killJM()
	<-jm.done
	jm2, _ := startProc(jmArgs...)
	o, err := client.wait()
	if err != nil {
		t.Fatalf("sluice run across a JobManager restart: %v\n%s", err, o)
	}
	if !strings.Contains(jm2.out.String(), `msg="recovering job"`) {
		t.Errorf("the new JobManager did not recover the job from the HA store on HDFS")
	}
	if !strings.Contains(jm2.out.String(), "kerberos: logged in") {
		t.Errorf("the JobManager did not log in from the keytab")
	}
	checkExactlyOnce(t, r.fs, out, n, keys)
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkPrivateTree checks that every directory under root on HDFS (root
// too) has permission 0700 and every file 0600, and returns the number of
// files.
func (r *rig) checkPrivateTree(t *testing.T, root string) (files int) {
	t.Helper()
	var walk func(p string)
	walk = func(p string) {
		fi, err := r.fs.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := iofs.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has permission %v on HDFS, want %v", p, fi.Mode().Perm(), want)
		}
		if fi.IsDir() {
			entries, err := r.fs.ReadDir(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				walk(path.Join(p, e.Name()))
			}
		}
	}
	walk(root)
	return files
}
