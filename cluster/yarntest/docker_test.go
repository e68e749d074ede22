//go:build integration && dockercluster

package yarntest

// The multi-host tests: Sluice jobs in yarn-application mode on the
// dockerized cluster of integration/dockercluster (a master, three
// NodeManager + DataNode hosts and three Kafka brokers, each its own
// container), with the client on the Docker host. Run with
//
//	make integration-docker
//	go test -tags 'integration dockercluster' -count=1 -run TestDocker ./cluster/yarntest/

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/integration/dockercluster"
	"github.com/sluice/sluice/integration/minicluster"
	"github.com/sluice/sluice/internal/testwait"
	"github.com/sluice/sluice/rest/restclient"
	"github.com/sluice/sluice/yarn"
)

// dockerRig is a rig on the docker cluster.
type dockerRig struct {
	*rig
	dc *dockercluster.Cluster
}

func newDockerRig(t *testing.T) *dockerRig {
	t.Helper()
	dc := dockercluster.Shared(t)
	mc, err := minicluster.Load(dc.ConfDir)
	if err != nil {
		t.Fatal(err)
	}
	d := &dockerRig{rig: newRigOn(t, mc), dc: dc}
	d.allNodesUp(t, context.Background())
	return d
}

// allNodesUp waits until every node runs and the ResourceManager counts
// every NodeManager active, so that a test starts on the whole cluster
// whatever the one before it did.
func (d *dockerRig) allNodesUp(t *testing.T, ctx context.Context) {
	t.Helper()
	workers := d.dc.Role(dockercluster.RoleWorker)
	testwait.Eventually(t, 3*time.Minute, "every node running and every NodeManager active", func() bool {
		for _, n := range d.dc.Nodes {
			if ok, err := d.dc.Running(ctx, n.Name); err != nil || !ok {
				return false
			}
		}
		var m struct {
			ClusterMetrics struct{ ActiveNodes int } `json:"clusterMetrics"`
		}
		return d.getJSON(ctx, "http://"+net.JoinHostPort(d.dc.Master().IP, "8088")+"/ws/v1/cluster/metrics", &m) == nil &&
			m.ClusterMetrics.ActiveNodes == len(workers)
	})
}

func (d *dockerRig) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// kafkaJob is one run of cluster/testdata/kafkajob on the docker cluster.
type kafkaJob struct {
	in, out, prefix string
	n, keys         int
	p               *run
	appID, job      string
	rc              *restclient.Client
}

// startKafkaJob writes partitions×perPartition input records to a new
// topic (replication 3) and deploys kafkajob on them, the counter spending
// slow on each record, checkpointing to HDFS every 500 ms, props being more
// options of the run (-Dkey=value); it returns once the job runs and has
// completed a checkpoint.
func (d *dockerRig) startKafkaJob(t *testing.T, ctx context.Context, name string, partitions, perPartition, keys int, slow time.Duration, props ...string) *kafkaJob {
	t.Helper()
	sfx := make([]byte, 4)
	rand.Read(sfx)
	s := hex.EncodeToString(sfx)
	j := &kafkaJob{in: "docker-in-" + s, out: "docker-out-" + s, prefix: "docker-" + s, n: partitions * perPartition, keys: keys}
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, topic := range []string{j.in, j.out} {
		if _, err := adm.CreateTopic(ctx, int32(partitions), 3, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	var recs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: j.in, Partition: int32(p), Value: []byte(fmt.Sprintf("%d:%d", p, p*perPartition+i))})
		}
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	producer.Close()

	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dyarn.application.name=" + name,
		"-Dexecution.checkpointing.dir=hdfs://" + d.hdfs + "/ckpt", "-Dexecution.checkpointing.interval=500ms",
		"-Drestart-strategy.type=fixed-delay", "-Drestart-strategy.fixed-delay.attempts=20", "-Drestart-strategy.fixed-delay.delay=1s"}, small...)
	args = append(args, props...)
	args = append(args, bins.kafkaJob, "-bootstrap", strings.Join(d.dc.Bootstrap(), ","), "-in", j.in, "-out", j.out,
		"-prefix", j.prefix, "-keys", strconv.Itoa(keys), "-slow", slow.String())
	j.p, j.appID, _, j.rc, j.job = d.deploy(t, ctx, args...)
	t.Cleanup(func() {
		if t.Failed() {
			d.dumpApplication(t, j)
		}
	})
	testwait.Eventually(t, 2*time.Minute, "a completed checkpoint", func() bool { return hasCompletedCheckpoint(ctx, j.rc, j.job) })
	if st, err := j.rc.Job(ctx, j.job); err != nil || string(st.State) != "RUNNING" {
		t.Fatalf("job %s is not RUNNING after its first checkpoint (%v, %v): the test's fault would land after the job", j.job, st, err)
	}
	return j
}

// dumpApplication logs, for a failed test, the job's checkpoints and
// vertices as REST reports them and the last lines of every log file of
// the application's containers on every worker, which outlive the test.
func (d *dockerRig) dumpApplication(t *testing.T, j *kafkaJob) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := j.rc.Job(ctx, j.job); err != nil {
		t.Logf("---- job %s: %v", j.job, err)
	} else {
		b, _ := json.Marshal(st)
		t.Logf("---- job %s:\n%s", j.job, b)
	}
	if cs, err := j.rc.JobCheckpoints(ctx, j.job); err != nil {
		t.Logf("---- checkpoints of %s: %v", j.job, err)
	} else {
		b, _ := json.Marshal(cs)
		t.Logf("---- checkpoints of %s:\n%s", j.job, b)
	}
	script := `for f in /data/nm-logs/` + j.appID + `/*/*; do echo "==== $f"; tail -n 80 "$f"; done 2>&1`
	for _, n := range d.dc.Role(dockercluster.RoleWorker) {
		out, err := d.dc.Exec(ctx, n.Name, "sh", "-c", script)
		t.Logf("---- containers of %s on %s (%v):\n%s", j.appID, n.Name, err, out)
	}
}

// checkKafkaExactlyOnce reads the job's committed output (read_committed)
// and checks each key's counts 1..n/keys exactly once, and that no
// transaction of the job is left open.
func (d *dockerRig) checkKafkaExactlyOnce(t *testing.T, ctx context.Context, j *kafkaJob) {
	t.Helper()
	consumer, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...), kgo.ConsumeTopics(j.out),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	deadline := time.Now().Add(time.Minute)
	for len(got) < j.n && time.Now().Before(deadline) {
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := consumer.PollFetches(fctx)
		fcancel()
		fs.EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	}
	// A little longer: a duplicate past the expected count must show.
	fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
	consumer.PollFetches(fctx).EachRecord(func(rec *kgo.Record) { got = append(got, string(rec.Value)) })
	fcancel()
	var want []string
	for key := 0; key < j.keys; key++ {
		for c := 1; c <= j.n/j.keys; c++ {
			want = append(want, fmt.Sprintf("%d:%d", key, c))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("committed output of %s: %d records, want %d exactly once (first got %q)", j.out, len(got), len(want), got[:min(5, len(got))])
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	txns, err := kadm.NewClient(admin).DescribeTransactions(ctx)
	if err != nil {
		t.Fatalf("describing transactions: %v", err)
	}
	for _, tx := range txns.Sorted() {
		if strings.HasPrefix(tx.TxnID, j.prefix) && tx.State != "Empty" && tx.State != "CompleteCommit" && tx.State != "CompleteAbort" {
			t.Errorf("transaction %s of the job is left %s", tx.TxnID, tx.State)
		}
	}
}

// loopback reports whether host (a name or an address) is a loopback one.
func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// hostOf returns the host of a host:port or URL.
func hostOf(t *testing.T, s string) string {
	t.Helper()
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Hostname()
	}
	h, _, err := net.SplitHostPort(s)
	if err != nil {
		t.Fatalf("%q is neither a URL nor host:port: %v", s, err)
	}
	return h
}

// workerOf returns the worker node that host (its name or address) is.
func (d *dockerRig) workerOf(host string) (dockercluster.Node, bool) {
	for _, n := range d.dc.Role(dockercluster.RoleWorker) {
		if host == n.Name || host == n.IP {
			return n, true
		}
	}
	return dockercluster.Node{}, false
}

// TestDockerAddresses: a Kafka → Kafka job in yarn-application mode on the
// multi-host cluster, exactly once, and nothing the cluster publishes is a
// loopback address: the ApplicationMaster's host and tracking URL, the
// TaskManagers' RPC addresses (a worker host each) and data ports (bound on
// the worker's network, not on its loopback), the DataNodes' transfer
// addresses and the brokers' advertised listeners (each node's own address).
func TestDockerAddresses(t *testing.T) {
	d := newDockerRig(t)
	yc := d.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Data ports from a range, so that the test knows where the workers listen.
	j := d.startKafkaJob(t, ctx, "docker-addresses", 3, 2000, 5, 10*time.Millisecond, "-Dtaskmanager.data.port=50100-50110")

	rep := report(t, ctx, yc, j.appID)
	amNode, ok := d.workerOf(rep.Host)
	if !ok || loopback(rep.Host) {
		t.Errorf("ApplicationMaster host %q is not a worker host", rep.Host)
	}
	for _, u := range []string{rep.TrackingURL, rep.OriginalTrackingURL} {
		if u == "" || loopback(hostOf(t, u)) {
			t.Errorf("tracking URL %q (original %q): want a non-loopback host", rep.TrackingURL, rep.OriginalTrackingURL)
		}
	}
	if h := hostOf(t, rep.OriginalTrackingURL); h != amNode.IP && h != amNode.Name {
		t.Errorf("original tracking URL %q is not on the ApplicationMaster's host %s", rep.OriginalTrackingURL, amNode.Name)
	}
	// The REST endpoint at the tracking URL answers the Docker host.
	var overview map[string]any
	if err := d.getJSON(ctx, strings.TrimSuffix(rep.OriginalTrackingURL, "/")+"/overview", &overview); err != nil {
		t.Errorf("the tracking URL does not answer from outside the cluster: %v", err)
	}

	tms, err := j.rc.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tms) == 0 {
		t.Fatal("no TaskManagers")
	}
	for _, tm := range tms {
		h := hostOf(t, tm.Path)
		n, ok := d.workerOf(h)
		if !ok || loopback(h) {
			t.Errorf("TaskManager %s advertises %q, not a worker host", tm.ID, tm.Path)
			continue
		}
		// Its data port listens on the worker's network.
		ss, err := d.dc.Exec(ctx, n.Name, "ss", "-Hltn")
		if err != nil {
			t.Fatal(err)
		}
		var local []string
		for _, line := range strings.Split(ss, "\n") {
			if f := strings.Fields(line); len(f) >= 4 && strings.HasSuffix(f[3], ":"+strconv.Itoa(tm.DataPort)) {
				local = append(local, f[3])
			}
		}
		if len(local) == 0 {
			t.Errorf("TaskManager %s's data port %d is not listening on %s:\n%s", tm.ID, tm.DataPort, n.Name, ss)
		}
		for _, a := range local {
			if h, _, _ := net.SplitHostPort(a); h != "*" && h != "0.0.0.0" && h != "[::]" && h != n.IP && h != "::" {
				t.Errorf("TaskManager %s's data port is bound to %s on %s, not to its network", tm.ID, a, n.Name)
			}
		}
		t.Logf("TaskManager %s at %s, data port %d bound to %v", tm.ID, tm.Path, tm.DataPort, local)
	}

	// DataNodes, as the NameNode hands them to clients.
	var nn struct{ Beans []struct{ LiveNodes string } }
	if err := d.getJSON(ctx, "http://"+net.JoinHostPort(d.dc.Master().IP, "9870")+"/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo", &nn); err != nil || len(nn.Beans) != 1 {
		t.Fatalf("NameNodeInfo: %v %+v", err, nn)
	}
	var live map[string]struct{ XferAddr string }
	if err := json.Unmarshal([]byte(nn.Beans[0].LiveNodes), &live); err != nil {
		t.Fatalf("LiveNodes %q: %v", nn.Beans[0].LiveNodes, err)
	}
	seen := map[string]bool{}
	for name, dn := range live {
		h := hostOf(t, dn.XferAddr)
		n, ok := d.workerOf(h)
		if !ok || loopback(h) {
			t.Errorf("DataNode %s transfers at %q, not a worker's address", name, dn.XferAddr)
			continue
		}
		seen[n.Name] = true
	}
	if len(seen) != len(d.dc.Role(dockercluster.RoleWorker)) {
		t.Errorf("live DataNodes %v, want one on every worker", live)
	}

	// Brokers, as they advertise themselves.
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	md, err := kadm.NewClient(admin).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var advertised []string
	for _, b := range md.Brokers {
		advertised = append(advertised, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	slices.Sort(advertised)
	want := slices.Clone(d.dc.Bootstrap())
	slices.Sort(want)
	if !slices.Equal(advertised, want) {
		t.Errorf("brokers advertise %v, want their own addresses %v", advertised, want)
	}

	// The client is not on the web proxy's host (the master): its GET
	// form of cancel needs the token too.
	checkRESTNeedsItsToken(t, ctx, j.rc, j.job, true)
	d.endedExactlyOnce(t, ctx, yc, j)
}

// TestDockerNodeManagerHostKilled: the host of a NodeManager that runs a
// TaskManager (not the ApplicationMaster's) is killed mid-job (docker kill:
// its NodeManager, DataNode and containers die together). The job's
// TaskManagers on it are replaced by TaskManagers on other hosts, the job
// resumes from its checkpoint on HDFS and the output is exactly once.
func TestDockerNodeManagerHostKilled(t *testing.T) {
	d := newDockerRig(t)
	yc := d.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-nm-killed", 3, 4000, 6, 3*time.Millisecond)

	tms, err := j.rc.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, tm := range tms {
		before[tm.ID] = true
	}
	victim := d.taskManagerHostBesidesAM(t, ctx, yc, j)
	d.killHost(t, ctx, victim)
	killed := time.Now()
	testwait.Eventually(t, 3*time.Minute, "replacement TaskManagers on the other hosts", func() bool {
		tms, err := j.rc.TaskManagers(ctx)
		if err != nil {
			return false
		}
		fresh := 0
		for _, tm := range tms {
			n, _ := d.workerOf(hostOf(t, tm.Path))
			if n.Name == victim.Name {
				return false // the lost ones are still listed
			}
			if !before[tm.ID] {
				fresh++
			}
		}
		return fresh > 0
	})
	t.Logf("replacement TaskManagers registered %v after %s was killed", time.Since(killed).Round(time.Millisecond), victim.Name)
	d.endedExactlyOnce(t, ctx, nil, j)
	if st, err := j.rc.Job(ctx, j.job); err == nil {
		t.Logf("job %s ended %s", j.job, st.State)
	}
}

// TestDockerApplicationMasterHostKilled: the host of the ApplicationMaster
// is killed mid-job (its NodeManager, DataNode, the AM and any TaskManager
// there die together). YARN notices the lost node and starts a second
// application attempt on another host; its JobManager recovers the job
// from the high-availability data on HDFS (the same job, not the program
// run again) and resumes it from its latest checkpoint, and the output is
// exactly once. The client that submitted the application follows it to
// its end.
func TestDockerApplicationMasterHostKilled(t *testing.T) {
	d := newDockerRig(t)
	yc := d.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-am-killed", 3, 4000, 6, 3*time.Millisecond)

	first := report(t, ctx, yc, j.appID)
	victim, ok := d.workerOf(first.Host)
	if !ok {
		t.Fatalf("the ApplicationMaster runs on %q, not on a worker", first.Host)
	}
	d.killHost(t, ctx, victim)
	killed := time.Now()
	var second string
	testwait.Eventually(t, 3*time.Minute, "a second ApplicationMaster attempt on another host", func() bool {
		id, err := yarn.ParseApplicationID(j.appID)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := yc.GetApplicationReport(ctx, id)
		if err != nil || rep.Host == "" || rep.Host == first.Host || rep.Host == "N/A" {
			return false
		}
		second = rep.Host
		return true
	})
	t.Logf("ApplicationMaster on %s killed; a second attempt runs on %s %v later", victim.Name, second, time.Since(killed).Round(time.Millisecond))
	d.endedExactlyOnce(t, ctx, yc, j)
}

// TestDockerDataNodeStoppedDuringUploads: the DataNode of a host that runs
// a TaskManager is killed (SIGKILL, its NodeManager and the TaskManager
// live on) while the job uploads a checkpoint every 500 ms. With two
// DataNodes left (replication 2) checkpoints go on completing after the
// kill, whatever the writes in flight to the dead one did, and the output
// is exactly once.
func TestDockerDataNodeStoppedDuringUploads(t *testing.T) {
	d := newDockerRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-dn-stopped", 3, 4000, 6, 3*time.Millisecond)

	tms, err := j.rc.TaskManagers(ctx)
	if err != nil || len(tms) == 0 {
		t.Fatalf("TaskManagers: %v %v", tms, err)
	}
	victim, ok := d.workerOf(hostOf(t, tms[0].Path))
	if !ok {
		t.Fatalf("TaskManager %s runs on %q, not on a worker", tms[0].ID, tms[0].Path)
	}
	before, err := j.rc.JobCheckpoints(ctx, j.job)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := d.dc.Exec(ctx, victim.Name, "/opt/sluice/bin/node.sh", "stop-datanode"); err != nil {
		t.Fatalf("stopping the DataNode of %s: %v %s", victim.Name, err, out)
	}
	t.Cleanup(func() {
		if out, err := d.dc.Exec(context.Background(), victim.Name, "/opt/sluice/bin/node.sh", "start-datanode"); err != nil {
			t.Errorf("starting the DataNode of %s again: %v %s", victim.Name, err, out)
		}
	})
	t.Logf("DataNode of %s killed after %d completed checkpoints", victim.Name, before.Counts.Completed)
	testwait.Eventually(t, 3*time.Minute, "three checkpoints completed after the DataNode died", func() bool {
		st, err := j.rc.JobCheckpoints(ctx, j.job)
		if err != nil {
			select {
			case <-j.p.done:
				return true // the job ended first: the output check decides
			default:
			}
			return false
		}
		return st.Counts.Completed >= before.Counts.Completed+3
	})
	d.endedExactlyOnce(t, ctx, nil, j)
}

// TestDockerWorkerCutOff: a host running a TaskManager (not the
// ApplicationMaster's) is cut off the network for 30 s, its processes
// running on, then reconnected. The JobManager declares its TaskManagers
// lost (heartbeat.timeout) and YARN its NodeManager (15 s here); the job
// resumes on TaskManagers elsewhere from its checkpoint. When the host
// comes back, its old TaskManager must not rejoin the job's attempt: the
// output is exactly once, read_committed, no transaction is left open,
// and no container of the application outlives it.
func TestDockerWorkerCutOff(t *testing.T) {
	d := newDockerRig(t)
	yc := d.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-worker-cut", 3, 4000, 6, 3*time.Millisecond)
	t.Cleanup(func() { d.allNodesUp(t, context.Background()) })

	victim := d.taskManagerHostBesidesAM(t, ctx, yc, j)
	d.cutOff(t, ctx, victim, j, 30*time.Second, func() {
		// 30 s alone, far past heartbeat.timeout (5 s): the TaskManager
		// there has stopped the job's tasks, its workers (the job binary,
		// run from the TaskManager's blob directory) are gone.
		out, _ := d.dc.Exec(ctx, victim.Name, "sh", "-c", "ps -eo args | grep -c '[t]askmanager-work/blobs/' || true")
		if n := strings.TrimSpace(out); n != "0" {
			ps, _ := d.dc.Exec(ctx, victim.Name, "ps", "-eo", "pid,args")
			t.Errorf("%s, cut off for 30 s, still runs %s workers of the job:\n%s", victim.Name, n, ps)
		}
	})
	d.endedExactlyOnce(t, ctx, yc, j)
}

// TestDockerBrokerKilled: two brokers killed mid-transaction, one after the
// other, each restarted 15 s later: first the transaction coordinator of the
// job's sink (the broker leading the __transaction_state partition of one of
// its ongoing transactions: the transaction moves to another coordinator),
// then the broker leading partition 0 of the job's output. The job rides
// both out on the other two brokers (replication 3, min.insync.replicas 2)
// and its output is exactly once, read_committed, with no transaction left
// open.
func TestDockerBrokerKilled(t *testing.T) {
	d := newDockerRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-broker-killed", 3, 10000, 6, 3*time.Millisecond)
	coordinator, txnID := d.txnCoordinator(t, ctx, j)
	d.killAndRestart(t, ctx, j, coordinator, fmt.Sprintf("transaction coordinator of %s", txnID))
	select {
	case <-j.p.done:
		t.Fatal("the job ended before its output's leader could be killed: give it more records")
	default:
	}
	leader := d.outputLeader(t, ctx, j)
	d.killAndRestart(t, ctx, j, leader, fmt.Sprintf("leader of %s/0", j.out))
	d.endedExactlyOnce(t, ctx, nil, j)
	d.brokersBack(t, ctx)
}

// killAndRestart kills broker (docker kill) and restarts it 15 s later, or
// at once if the job ends before.
func (d *dockerRig) killAndRestart(t *testing.T, ctx context.Context, j *kafkaJob, broker dockercluster.Node, what string) {
	t.Helper()
	if err := d.dc.Kill(ctx, broker.Name); err != nil {
		t.Fatal(err)
	}
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := d.dc.Restart(context.Background(), broker.Name); err != nil {
				t.Errorf("restarting %s: %v", broker.Name, err)
			}
		}
	}
	defer restart()
	ended := "15 s later"
	select {
	case <-j.p.done:
		ended = "when the job ended"
	case <-time.After(15 * time.Second):
	}
	restart()
	t.Logf("%s (%s) was killed and restarted %s", broker.Name, what, ended)
}

// txnCoordinator is the broker coordinating one of the job's ongoing
// transactions, and that transaction's id. It waits for one (the job opens
// one per sink subtask and checkpoint).
func (d *dockerRig) txnCoordinator(t *testing.T, ctx context.Context, j *kafkaJob) (dockercluster.Node, string) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	deadline := time.Now().Add(time.Minute)
	for {
		listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		if err != nil {
			t.Logf("listing transactions: %v", err)
		}
		for _, tx := range listed.Sorted() {
			if !strings.HasPrefix(tx.TxnID, j.prefix) {
				continue
			}
			md, err := adm.BrokerMetadata(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range md.Brokers {
				if b.NodeID != tx.Coordinator {
					continue
				}
				for _, n := range d.dc.Role(dockercluster.RoleKafka) {
					if n.IP == b.Host {
						return n, tx.TxnID
					}
				}
			}
			t.Fatalf("no node advertises broker %d, the coordinator of %s (%+v)", tx.Coordinator, tx.TxnID, md.Brokers)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ongoing transaction of %s within a minute (listed: %+v)", j.prefix, listed)
		}
		select {
		case <-j.p.done:
			t.Fatalf("the job ended before one of its transactions could be found ongoing")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestDockerBrokerPartitioned: the broker leading partition 0 of the job's
// output is cut off the network mid-job (docker network disconnect) for
// 20 s, then reconnected. With replication 3 and min.insync.replicas 2 the
// other two go on; the job rides out the partition and its output is
// exactly once, read_committed, with no transaction left open.
func TestDockerBrokerPartitioned(t *testing.T) {
	d := newDockerRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	j := d.startKafkaJob(t, ctx, "docker-broker-cut", 3, 4000, 6, 3*time.Millisecond)

	broker := d.outputLeader(t, ctx, j)
	d.cutOff(t, ctx, broker, j, 20*time.Second, nil)
	d.endedExactlyOnce(t, ctx, nil, j)
	d.brokersBack(t, ctx)
}

// outputLeader is the broker leading partition 0 of the job's output.
func (d *dockerRig) outputLeader(t *testing.T, ctx context.Context, j *kafkaJob) dockercluster.Node {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	md, err := kadm.NewClient(admin).Metadata(ctx, j.out)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[j.out].Partitions[0].Leader
	for _, b := range md.Brokers {
		if b.NodeID == leader {
			for _, n := range d.dc.Role(dockercluster.RoleKafka) {
				if n.IP == b.Host {
					return n
				}
			}
		}
	}
	t.Fatalf("no node advertises broker %d, the leader of %s/0 (%+v)", leader, j.out, md.Brokers)
	return dockercluster.Node{}
}

// brokersBack waits for every broker to be in the cluster's metadata.
func (d *dockerRig) brokersBack(t *testing.T, ctx context.Context) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(d.dc.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	testwait.Eventually(t, 2*time.Minute, "every broker back in the cluster's metadata", func() bool {
		md, err := kadm.NewClient(admin).BrokerMetadata(ctx)
		return err == nil && len(md.Brokers) == len(d.dc.Role(dockercluster.RoleKafka))
	})
}

// taskManagerHostBesidesAM returns a worker that runs one of the job's
// TaskManagers and not its ApplicationMaster.
func (d *dockerRig) taskManagerHostBesidesAM(t *testing.T, ctx context.Context, yc *yarn.Client, j *kafkaJob) dockercluster.Node {
	t.Helper()
	amNode, _ := d.workerOf(report(t, ctx, yc, j.appID).Host)
	tms, err := j.rc.TaskManagers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tms {
		if n, ok := d.workerOf(hostOf(t, tm.Path)); ok && n.Name != amNode.Name {
			return n
		}
	}
	t.Fatalf("every TaskManager %v runs on the ApplicationMaster's host %s: no host to fail without the AM", tms, amNode.Name)
	return dockercluster.Node{}
}

// killHost kills node (docker kill) and, when the test ends, boots it
// again and waits for the whole cluster.
func (d *dockerRig) killHost(t *testing.T, ctx context.Context, node dockercluster.Node) {
	t.Helper()
	if err := d.dc.Kill(ctx, node.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.dc.Restart(context.Background(), node.Name); err != nil {
			t.Errorf("restarting %s: %v", node.Name, err)
		}
		d.allNodesUp(t, context.Background())
	})
}

// cutOff cuts node off the network for dur, or until the job ends if it
// ends first, then runs during (if the cut lasted) and reconnects it (also
// if the test fails meanwhile).
func (d *dockerRig) cutOff(t *testing.T, ctx context.Context, node dockercluster.Node, j *kafkaJob, dur time.Duration, during func()) {
	t.Helper()
	if err := d.dc.Disconnect(ctx, node.Name); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := d.dc.Connect(context.Background(), node.Name); err != nil {
				t.Errorf("reconnecting %s: %v", node.Name, err)
			}
		}
	}
	defer heal()
	select {
	case <-j.p.done:
	case <-time.After(dur):
		if during != nil {
			during()
		}
	}
	heal()
	t.Logf("%s was cut off for %v and reconnected", node.Name, dur)
}

// endedExactlyOnce: the application succeeded, the job's output is exactly
// once, and (given yc) no container of the application is left.
func (d *dockerRig) endedExactlyOnce(t *testing.T, ctx context.Context, yc *yarn.Client, j *kafkaJob) {
	t.Helper()
	succeeded(t, j.p, j.appID)
	d.checkKafkaExactlyOnce(t, ctx, j)
	if yc != nil {
		noContainersLeft(t, ctx, yc, j.appID)
	}
}
