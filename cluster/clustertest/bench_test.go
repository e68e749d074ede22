package clustertest

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
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
		testwait.Eventually(b, 60*time.Second, "the job to come back to two workers", func() bool {
			return len(c.workerTaskManagers()) >= 2 && len(c.live()) >= 3
		})
		// A checkpoint completes on the two workers, so that the next
		// failover restores from one.
		done, _ := jobMetric(c, "flink_jobmanager_job_numberOfCompletedCheckpoints", job)
		testwait.Eventually(b, 60*time.Second, "a checkpoint of the recovered job", func() bool {
			n, _ := jobMetric(c, "flink_jobmanager_job_numberOfCompletedCheckpoints", job)
			return n > done
		})
		victim := c.workerTaskManagers()[0]
		b.StartTimer()
		killed := time.Now()
		victim.kill()
		// The sample is the job's RUNNING timestamp, not when this loop sees it.
		testwait.Eventually(b, 60*time.Second, "the job to be RUNNING again", func() bool {
			ok, at := running()
			if ok && at >= killed.UnixMilli() {
				samples = append(samples, float64(at-killed.UnixMilli()))
				return true
			}
			return false
		})
		b.StopTimer()
		c.startTaskManager()
	}
	sort.Float64s(samples)
	b.ReportMetric(samples[len(samples)/2], "ms-to-running(median)")
	b.ReportMetric(samples[len(samples)-1], "ms-to-running(max)")
	c.sluice("cancel", "-m", c.rest(), job)
}
