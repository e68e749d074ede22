package clustertest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

// A standalone cluster started as the README says, without any address
// setting (only its ports moved off the defaults so that tests do not
// collide), runs a job; its JobManager listens on loopback only, so a peer
// on another host can neither submit jobs nor register TaskManagers; nor
// reach its TaskManager.
func TestStandaloneClusterWithDefaultAddresses(t *testing.T) {
	c := &cluster{t: t, dir: t.TempDir(), rpcPort: freePort(t), restPort: freePort(t)}
	c.jm = c.start("jobmanager", "jobmanager", "-D", "jobmanager.rpc.port="+strconv.Itoa(c.rpcPort), "-D", "rest.port="+strconv.Itoa(c.restPort))
	tm := c.start("taskmanager-0", "taskmanager", "-m", "localhost:"+strconv.Itoa(c.rpcPort), "--slots", "2",
		"-D", "process.taskmanager.working-dir="+filepath.Join(c.dir, "tm0"))
	c.tms = append(c.tms, tm)
	t.Cleanup(func() {
		tm.stop()
		c.jm.stop()
		if t.Failed() {
			for _, p := range []*proc{c.jm, tm} {
				t.Logf("---- %s:\n%s", p.name, tail(readFile(p.log), 30))
			}
		}
	})
	c.waitTaskManagers(1)

	rest := "localhost:" + strconv.Itoa(c.restPort)
	out := filepath.Join(c.dir, "out")
	o := c.mustSluice(append([]string{"run", "-m", rest, "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")},
		append(checkpointed, jobBin, "-out", out, "-n", "2000", "-keys", "4", "-rate", "4000")...)...)
	if !regexp.MustCompile(`Job has been submitted with JobID [0-9a-f]{32}`).MatchString(o) {
		t.Fatalf("sluice run:\n%s", o)
	}
	checkExactlyOnce(t, out, 2000, 4)

	// Loopback only: nothing answers on the machine's other addresses.
	ip := nonLoopbackIP(t)
	if ip == "" {
		t.Log("this machine has no non-loopback address: the binding is not checked from outside")
		return
	}
	// The TaskManager's RPC port too (its address as GET /taskmanagers
	// shows it: loopback).
	b, err := httpGet(rest + "/taskmanagers")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"path":"127\.0\.0\.1:(\d+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("GET /taskmanagers: the TaskManager does not advertise 127.0.0.1: %s", b)
	}
	tmPort, _ := strconv.Atoi(string(m[1]))
	for _, p := range []struct {
		who  string
		port int
	}{{"the JobManager's REST endpoint", c.restPort}, {"the JobManager's RPC endpoint", c.rpcPort}, {"the TaskManager", tmPort}} {
		addr := net.JoinHostPort(ip, strconv.Itoa(p.port))
		if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("%s answers on %s: it binds more than loopback by default", p.who, addr)
		}
	}
	testwait.Eventually(t, 5*time.Second, "the REST endpoint on loopback", func() bool {
		_, err := httpGet(rest + "/overview")
		return err == nil
	})
}

// nonLoopbackIP is an IPv4 address of this machine other than loopback, or
// "" when it has none.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return strings.TrimSpace(string(b))
}
