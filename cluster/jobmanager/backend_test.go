package jobmanager

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/resourcemanager"
	"github.com/sluice/sluice/rest"
)

// serveREST serves b through the real REST server on loopback and returns
// a function that GETs a path and decodes its JSON answer (numbers kept as
// written).
func serveREST(t *testing.T, b Backend) func(path string) any {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rest.Serve(rest.Config{}, b, ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return func(path string) any {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.UseNumber()
		var doc any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
		return doc
	}
}

// member returns the JSON of the member of doc at path ("a/0/b": member b
// of the first element of member a), or "(absent)".
func member(doc any, path string) string {
	cur := doc
	for _, p := range strings.Split(path, "/") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return "(absent)"
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return "(absent)"
			}
			cur = c[i]
		default:
			return "(absent)"
		}
	}
	b, _ := json.Marshal(cur)
	return string(b)
}

// checkMembers compares members of doc with want (path to JSON).
func checkMembers(t *testing.T, doc any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		if got := member(doc, path); got != w {
			t.Errorf("%s = %s, want %s", path, got, w)
		}
	}
}

// fakeRM stands in for the ResourceManager's snapshot of its TaskManagers.
type fakeRM []resourcemanager.TaskManagerInfo

func (f fakeRM) TaskManagers(context.Context) ([]resourcemanager.TaskManagerInfo, error) {
	return f, nil
}

// GET /taskmanagers shows what the ResourceManager knows of each
// TaskManager in Flink's form: the time of its last heartbeat (epoch ms,
// despite Flink's name), its data port and its hardware.
func TestBackendTaskManagers(t *testing.T) {
	d, err := NewDispatcher(Config{WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	slot := resourcemanager.Resources{CPUCores: 1, MemoryBytes: 512 << 20}
	tms := fakeRM{
		{ID: "tm-1", Address: "127.0.0.1:40001", SlotsTotal: 2, SlotsFree: 1, SlotResources: slot,
			Resources: resourcemanager.Resources{CPUCores: 2, MemoryBytes: 1 << 30}, DataPort: 6121,
			Hardware:      resourcemanager.Hardware{CPUCores: 8, PhysicalMemoryBytes: 16 << 30, FreeMemoryBytes: 9 << 30},
			LastHeartbeat: time.UnixMilli(1_700_000_000_123)},
		{ID: "tm-2", Address: "127.0.0.1:40002", SlotsTotal: 1, SlotsFree: 0, SlotResources: slot, Resources: slot,
			LastHeartbeat: time.UnixMilli(1_700_000_001_000)},
	}
	get := serveREST(t, Backend{D: d, TMs: rmLister{tms}})
	doc := get("/taskmanagers")
	for _, tc := range []struct {
		name string
		want map[string]string
	}{
		{"a TaskManager with a data port", map[string]string{
			"taskmanagers/0/id": `"tm-1"`, "taskmanagers/0/path": `"127.0.0.1:40001"`,
			"taskmanagers/0/dataPort": "6121", "taskmanagers/0/jmxPort": "-1",
			"taskmanagers/0/timeSinceLastHeartbeat": "1700000000123",
			"taskmanagers/0/slotsNumber":            "2", "taskmanagers/0/freeSlots": "1",
			"taskmanagers/0/totalResource/cpuCores": "2", "taskmanagers/0/totalResource/taskHeapMemory": "1024",
			"taskmanagers/0/freeResource/cpuCores": "1", "taskmanagers/0/freeResource/taskHeapMemory": "512",
			"taskmanagers/0/hardware/cpuCores": "8", "taskmanagers/0/hardware/physicalMemory": "17179869184",
			"taskmanagers/0/hardware/freeMemory": "9663676416", "taskmanagers/0/hardware/managedMemory": "0",
		}},
		{"a TaskManager whose workers take free data ports, that reported no hardware", map[string]string{
			"taskmanagers/1/id": `"tm-2"`, "taskmanagers/1/dataPort": "-1",
			"taskmanagers/1/timeSinceLastHeartbeat": "1700000001000",
			"taskmanagers/1/hardware":               `{"cpuCores":0,"freeMemory":0,"managedMemory":0,"physicalMemory":0}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkMembers(t, doc, tc.want) })
	}
}
