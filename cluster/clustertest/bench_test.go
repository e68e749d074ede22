package clustertest

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"
)

// BenchmarkTaskManagerLossToRunning measures the time from kill -9 of a
// TaskManager running a job's worker to the job RUNNING again (on the
// remaining and a replacement TaskManager), as the JobManager's job
// timestamps show it. Run with make bench-cluster.
func BenchmarkTaskManagerLossToRunning(b *testing.B) {
	c := newCluster(b, 3)
	args := append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt"),
		"-D", "restart-strategy.fixed-delay.attempts=1000"}, checkpointed...)
	args = append(args, jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "1000000000", "-keys", "100", "-rate", "20000")
	o, err := c.sluice(args...)
	if err != nil {
		b.Fatalf("sluice run: %v\n%s", err, o)
	}
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		b.Fatalf("no job id:\n%s", o)
	}
	job := m[1]
	running := func() (bool, int64) {
		body, err := httpGet(c.rest() + "/jobs/" + job)
		if err != nil {
			return false, 0
		}
		var d struct {
			State      string           `json:"state"`
			Timestamps map[string]int64 `json:"timestamps"`
		}
		if json.Unmarshal(body, &d) != nil {
			return false, 0
		}
		return d.State == "RUNNING", d.Timestamps["RUNNING"]
	}
	var samples []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		deadline := time.Now().Add(60 * time.Second)
		for len(c.workerTaskManagers()) < 2 || len(c.live()) < 3 {
			if time.Now().After(deadline) {
				b.Fatal("the job did not come back to two workers")
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second) // let checkpoints complete
		victim := c.workerTaskManagers()[0]
		b.StartTimer()
		killed := time.Now()
		victim.kill()
		for {
			ok, at := running()
			if ok && at >= killed.UnixMilli() {
				samples = append(samples, float64(at-killed.UnixMilli()))
				break
			}
			if time.Since(killed) > 60*time.Second {
				b.Fatal("the job was not RUNNING again within 60 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.StopTimer()
		c.startTaskManager()
	}
	sort.Float64s(samples)
	b.ReportMetric(samples[len(samples)/2], "ms-to-running(median)")
	b.ReportMetric(samples[len(samples)-1], "ms-to-running(max)")
	c.sluice("cancel", "-m", c.rest(), job)
}
