package clustertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

func httpGet(addr string) ([]byte, error) {
	resp, err := http.Get("http://" + addr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", addr, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// jobMetric is the sum over its series of job's metric at GET /metrics
// (flink_..., labelled job_id), false if /metrics did not answer.
func jobMetric(c *cluster, metric, job string) (float64, bool) {
	b, err := httpGet(c.rest() + "/metrics")
	if err != nil {
		return 0, false
	}
	total := 0.0
	for _, m := range regexp.MustCompile(metric+`\{[^}]*job_id="`+regexp.QuoteMeta(job)+`"[^}]*\} ([0-9.e+]+)`).FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		total += v
	}
	return total, true
}

// taskManagerIDs are the ids of the TaskManagers registered now.
func taskManagerIDs(t *testing.T, c *cluster) map[string]bool {
	t.Helper()
	b, err := httpGet(c.rest() + "/taskmanagers")
	if err != nil {
		t.Fatal(err)
	}
	var tms struct {
		TaskManagers []struct{ ID string } `json:"taskmanagers"`
	}
	if err := json.Unmarshal(b, &tms); err != nil {
		t.Fatalf("GET /taskmanagers: %v: %s", err, b)
	}
	ids := map[string]bool{}
	for _, tm := range tms.TaskManagers {
		ids[tm.ID] = true
	}
	return ids
}

// GET /taskmanagers answers as Flink does: the time of each TaskManager's
// last heartbeat (epoch ms, despite the name) and its machine's hardware.
// After a TaskManager running a worker is killed, GET
// /jobs/:jobid/exceptions names the failure: the lost worker's subtasks,
// with the error's type and the TaskManager; the job restarted from a
// checkpoint, which GET /jobs/:jobid/checkpoints reports restored.
func TestRESTAnswersOfARealCluster(t *testing.T) {
	c := newCluster(t, 3)
	b, err := httpGet(c.rest() + "/taskmanagers")
	if err != nil {
		t.Fatal(err)
	}
	var tms struct {
		TaskManagers []struct {
			ID                     string
			TimeSinceLastHeartbeat int64 `json:"timeSinceLastHeartbeat"`
			DataPort               int   `json:"dataPort"`
			Hardware               struct {
				CPUCores       int   `json:"cpuCores"`
				PhysicalMemory int64 `json:"physicalMemory"`
				FreeMemory     int64 `json:"freeMemory"`
			} `json:"hardware"`
		} `json:"taskmanagers"`
	}
	if err := json.Unmarshal(b, &tms); err != nil || len(tms.TaskManagers) != 3 {
		t.Fatalf("GET /taskmanagers: %v: %s", err, b)
	}
	now := time.Now().UnixMilli()
	for _, tm := range tms.TaskManagers {
		if hb := tm.TimeSinceLastHeartbeat; hb < now-60_000 || hb > now+1000 {
			t.Errorf("TaskManager %s: timeSinceLastHeartbeat %d is not the epoch ms of a heartbeat within the last minute (now %d)", tm.ID, hb, now)
		}
		if h := tm.Hardware; h.CPUCores <= 0 || h.PhysicalMemory <= 0 || h.FreeMemory <= 0 || h.FreeMemory > h.PhysicalMemory {
			t.Errorf("TaskManager %s: hardware %+v", tm.ID, h)
		}
		if tm.DataPort != -1 {
			t.Errorf("TaskManager %s: dataPort %d, want -1 (its workers take free ports)", tm.ID, tm.DataPort)
		}
	}

	o := c.mustSluice(append(append([]string{"run", "-d", "-m", c.rest(), "-p", "2", "-D", "execution.checkpointing.dir=file://" + filepath.Join(c.dir, "ckpt")},
		checkpointed...), jobBin, "-out", filepath.Join(c.dir, "out"), "-n", "1000000", "-rate", "2000")...)
	m := regexp.MustCompile(`JobID ([0-9a-f]{32})`).FindStringSubmatch(o)
	if m == nil {
		t.Fatalf("no job id in the output of sluice run -d:\n%s", o)
	}
	job := m[1]
	testwait.Eventually(t, 30*time.Second, "a completed checkpoint", func() bool {
		m, _ := filepath.Glob(filepath.Join(c.dir, "ckpt", "*", "chk-*", "_metadata"))
		return len(m) > 0
	})
	before := taskManagerIDs(t, c)
	victims := c.workerTaskManagers()
	if len(victims) == 0 {
		t.Fatal("no TaskManager runs a worker")
	}
	victims[0].kill()
	var killed string
	testwait.Eventually(t, 30*time.Second, "the killed TaskManager to be lost", func() bool {
		after := taskManagerIDs(t, c)
		for id := range before {
			if !after[id] {
				killed = id
			}
		}
		return len(after) == 2 && killed != ""
	})

	type exception struct {
		ExceptionName string `json:"exceptionName"`
		Stacktrace    string `json:"stacktrace"`
		Timestamp     int64  `json:"timestamp"`
		TaskName      string `json:"taskName"`
		Endpoint      string `json:"endpoint"`
		TaskManagerID string `json:"taskManagerId"`
	}
	var history struct {
		ExceptionHistory struct {
			Entries []struct {
				exception
				Concurrent []exception `json:"concurrentExceptions"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	var lost *exception
	testwait.Eventually(t, 30*time.Second, "the lost worker's or TaskManager's failure in the exception history", func() bool {
		b, err := httpGet(c.rest() + "/jobs/" + job + "/exceptions")
		if err != nil || json.Unmarshal(b, &history) != nil {
			return false
		}
		for _, e := range history.ExceptionHistory.Entries {
			for _, x := range append([]exception{e.exception}, e.Concurrent...) {
				// The worker's broken session or the ResourceManager losing
				// its TaskManager, whichever the JobMaster learns of first.
				if x.TaskManagerID == killed && (x.ExceptionName == "*jobmanager.WorkerLostError" || x.ExceptionName == "*jobmanager.TaskManagerLostError") {
					lost = &x
					return true
				}
			}
		}
		return false
	})
	if !regexp.MustCompile(`^\S.* \([12]/2\)$`).MatchString(lost.TaskName) || lost.Endpoint == "" || lost.Timestamp < now || !strings.Contains(lost.Stacktrace, "TaskManager "+killed) {
		t.Errorf("the lost worker's failure %+v", *lost)
	}
	root := history.ExceptionHistory.Entries[0]
	if root.ExceptionName == "" || root.ExceptionName == "error" || root.TaskName == "" || root.TaskManagerID == "" {
		t.Errorf("the root failure %+v does not name its type, subtask and TaskManager", root.exception)
	}

	testwait.Eventually(t, 30*time.Second, "the job restored from its checkpoint", func() bool {
		b, err := httpGet(c.rest() + "/jobs/" + job + "/checkpoints")
		if err != nil {
			return false
		}
		var ck struct {
			Counts struct {
				Restored int64 `json:"restored"`
			} `json:"counts"`
			Latest struct {
				Restored *struct {
					ID           int64  `json:"id"`
					ExternalPath string `json:"external_path"`
				} `json:"restored"`
			} `json:"latest"`
		}
		return json.Unmarshal(b, &ck) == nil && ck.Counts.Restored >= 1 && ck.Latest.Restored != nil &&
			strings.Contains(ck.Latest.Restored.ExternalPath, "chk-")
	})
	c.mustSluice("cancel", "-m", c.rest(), job)
}
