//go:build integration

package yarntest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/testwait"
)

type flameNode struct {
	Name     string      `json:"name"`
	Value    int64       `json:"value"`
	Children []flameNode `json:"children"`
}

// samplesIn is the number of samples through frames of fn.
func (n *flameNode) samplesIn(fn string) int64 {
	if strings.HasPrefix(n.Name, fn+" (") {
		return n.Value
	}
	var v int64
	for i := range n.Children {
		v += n.Children[i].samplesIn(fn)
	}
	return v
}

// TestFlameGraphOnYARN: a busy job in yarn-application mode, with flame
// graphs on; the ON_CPU flame graph of its vertex whose Map spins
// (clusterjob -spin), read through the application's tracking URL (the
// ResourceManager's web proxy), shows the job's user function, sampled
// in the workers of the TaskManager containers. The job is then
// cancelled and the application leaves no container.
func TestFlameGraphOnYARN(t *testing.T) {
	r := newRig(t)
	yc := r.yarnClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"run", "--target", "yarn-application", "-p", "2", "-Dyarn.application.name=yarntest-flamegraph",
		"-Drest.flamegraph.enabled=true", "-Drest.flamegraph.num-samples=20"}, small...)
	args = append(args, bins.job, "-shape", "rebalance", "-out", "hdfs://"+r.hdfs+"/out", "-n", "100000000", "-rate", "1000", "-spin", "300000")
	p, appID, _, rc, job := r.deploy(t, ctx, args...)
	ended := false
	defer func() {
		if !ended {
			rc.Cancel(context.Background(), job)
			<-p.done
		}
	}()
	d, err := rc.Job(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	var vertex, name string
	for _, v := range d.Vertices {
		if strings.Contains(v.Name, "Map") {
			vertex, name = v.ID, v.Name
		}
	}
	if vertex == "" {
		t.Fatalf("no vertex of the Maps among %+v", d.Vertices)
	}
	u := report(t, ctx, yc, appID).TrackingURL
	if !strings.HasPrefix(u, "http") {
		u = "http://" + u
	}
	u = strings.TrimSuffix(u, "/") + "/jobs/" + job + "/vertices/" + vertex + "/flamegraph?type=ON_CPU"
	client := &http.Client{Timeout: 30 * time.Second}
	var fg struct {
		EndTimestamp int64      `json:"endTimestamp"`
		Data         *flameNode `json:"data"`
	}
	testwait.Eventually(t, 2*time.Minute, "the ON_CPU flame graph through the proxy", func() bool {
		res, err := client.Get(u)
		if err != nil {
			t.Logf("GET %s: %v", u, err)
			return false
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %.300s", u, res.Status, b)
		}
		fg.Data = nil
		if err := json.Unmarshal(b, &fg); err != nil {
			t.Fatalf("GET %s: %v in %.300s", u, err, b)
		}
		return fg.EndTimestamp > 0 && fg.Data != nil
	})
	const user = "main.spinWork"
	if in := fg.Data.samplesIn(user); fg.Data.Value <= 0 || in <= 0 {
		t.Errorf("the ON_CPU flame graph of %s: %d samples, %d in %s; want samples through the user function", name, fg.Data.Value, in, user)
	} else {
		t.Logf("ON_CPU flame graph of %s through the proxy: %d samples, %d in %s", name, fg.Data.Value, in, user)
	}
	if err := rc.Cancel(ctx, job); err != nil {
		t.Fatalf("cancelling the job: %v", err)
	}
	<-p.done
	ended = true
	noContainersLeft(t, ctx, yc, appID)
}
