package taskmanager

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// readLog reads a whole ReadLog stream: its header and data.
func readLog(c clusterpb.TaskManagerClient, req *clusterpb.ReadLogRequest) (*clusterpb.LogFileHeader, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := c.ReadLog(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var h *clusterpb.LogFileHeader
	var data bytes.Buffer
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return h, data.Bytes(), nil
		}
		if err != nil {
			return nil, nil, err
		}
		if m.GetHeader() != nil {
			h = m.GetHeader()
		}
		data.Write(m.GetData())
	}
}

// A TaskManager serves the files of its log directory and nothing else:
// names with a directory part are refused, links out of it and
// directories are not files of it, and a long file is served from its end.
func TestTaskManagerServesItsLogDirectory(t *testing.T) {
	r := startRM(t, 100*time.Millisecond, 2*time.Second)
	logDir := filepath.Join(t.TempDir(), "log")
	if err := os.MkdirAll(filepath.Join(logDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(filepath.Dir(logDir), "secret")
	big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // 300 KiB
	for name, content := range map[string][]byte{
		"taskmanager.log": []byte("the TaskManager's log\n"), "taskmanager.out": []byte("printed\n"),
		"job-1.err": nil, "big.log": big, "../secret": []byte("not a log"), "sub/inner.log": []byte("in a subdirectory"),
	} {
		if err := os.WriteFile(filepath.Join(logDir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(logDir, "escape.log")); err != nil {
		t.Fatal(err)
	}
	tm, _ := startTM(t, r.addr, func(c *Config) { c.LogDir = logDir; c.MaxLogFileBytes = 100 << 10 })
	c := clusterpb.NewTaskManagerClient(dial(t, tm.Address()))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	list, err := c.ListLogs(ctx, &clusterpb.ListLogsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range list.GetFiles() {
		names = append(names, f.GetName())
		if f.GetName() == "big.log" && (f.GetSize() != int64(len(big)) || f.GetMtimeMs() <= 0) {
			t.Errorf("big.log is listed as %+v", f)
		}
	}
	if got, want := strings.Join(names, " "), "big.log job-1.err taskmanager.log taskmanager.out"; got != want {
		t.Errorf("ListLogs = %s, want %s", got, want)
	}

	for _, tc := range []struct {
		name   string
		req    *clusterpb.ReadLogRequest
		code   codes.Code
		want   []byte
		offset int64
	}{
		{"log", &clusterpb.ReadLogRequest{Kind: clusterpb.LogFileKind_LOG_FILE_MAIN}, codes.OK, []byte("the TaskManager's log\n"), 0},
		{"stdout", &clusterpb.ReadLogRequest{Kind: clusterpb.LogFileKind_LOG_FILE_STDOUT}, codes.OK, []byte("printed\n"), 0},
		{"named", &clusterpb.ReadLogRequest{Name: "taskmanager.out"}, codes.OK, []byte("printed\n"), 0},
		{"empty file", &clusterpb.ReadLogRequest{Name: "job-1.err"}, codes.OK, nil, 0},
		{"longer than the limit: its end", &clusterpb.ReadLogRequest{Name: "big.log"}, codes.OK, big[len(big)-100<<10:], int64(len(big) - 100<<10)},
		{"parent directory", &clusterpb.ReadLogRequest{Name: "../secret"}, codes.InvalidArgument, nil, 0},
		{"dot dot", &clusterpb.ReadLogRequest{Name: ".."}, codes.InvalidArgument, nil, 0},
		{"subdirectory path", &clusterpb.ReadLogRequest{Name: "sub/inner.log"}, codes.InvalidArgument, nil, 0},
		{"absolute", &clusterpb.ReadLogRequest{Name: secret}, codes.InvalidArgument, nil, 0},
		{"no name", &clusterpb.ReadLogRequest{}, codes.InvalidArgument, nil, 0},
		{"a directory", &clusterpb.ReadLogRequest{Name: "sub"}, codes.NotFound, nil, 0},
		{"a link out of the directory", &clusterpb.ReadLogRequest{Name: "escape.log"}, codes.NotFound, nil, 0},
		{"missing", &clusterpb.ReadLogRequest{Name: "nope.log"}, codes.NotFound, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, data, err := readLog(c, tc.req)
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code %v (%v), want %v", got, err, tc.code)
			}
			if tc.code != codes.OK {
				if name := tc.req.GetName(); name != "" && !strings.Contains(status.Convert(err).Message(), name) {
					t.Errorf("the refusal %q does not name %q", status.Convert(err).Message(), name)
				}
				if bytes.Contains(data, []byte("not a log")) {
					t.Errorf("served a file outside the log directory")
				}
				return
			}
			if !bytes.Equal(data, tc.want) {
				t.Errorf("served %d bytes %.40q, want %d bytes %.40q", len(data), data, len(tc.want), tc.want)
			}
			if h == nil || h.GetOffset() != tc.offset || h.GetSize() != tc.offset+int64(len(tc.want)) {
				t.Errorf("header %+v, want offset %d of size %d", h, tc.offset, tc.offset+int64(len(tc.want)))
			}
		})
	}

	dump, err := c.ThreadDump(ctx, &clusterpb.ThreadDumpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d := string(dump.GetDump()); dump.GetTruncated() || !strings.HasPrefix(d, "goroutine ") || !strings.Contains(d, "(*TaskManager).ThreadDump") ||
		!strings.Contains(d, "(*TaskManager).Run") {
		t.Errorf("the goroutine dump does not show the TaskManager's goroutines (truncated %v):\n%.2000s", dump.GetTruncated(), d)
	}

	ms, err := c.ProcessMetrics(ctx, &clusterpb.ProcessMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms.GetMetrics() {
		got[m.GetName()] = m.GetValue()
	}
	for _, name := range []string{"Status.JVM.Memory.Heap.Used", "Status.JVM.Memory.Heap.Committed", "Status.JVM.Memory.NonHeap.Used", "Status.JVM.Threads.Count"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want > 0 (all: %v)", name, got[name], got)
		}
	}
	if runtime.GOOS == "linux" && got["Status.JVM.CPU.Time"] <= 0 {
		t.Errorf("Status.JVM.CPU.Time = %v on Linux", got["Status.JVM.CPU.Time"])
	}
}

func TestProcessMetrics(t *testing.T) {
	var ms runtime.MemStats
	ms.HeapAlloc, ms.HeapSys, ms.HeapReleased = 100, 400, 50
	ms.Sys = 1000
	ms.StackInuse, ms.MSpanInuse, ms.MCacheInuse, ms.BuckHashSys, ms.GCSys, ms.OtherSys = 1, 2, 3, 4, 5, 6
	ms.NumGC, ms.PauseTotalNs = 7, 3_500_000
	for _, tc := range []struct {
		name  string
		stats RuntimeStats
		want  string
	}{
		{"no memory limit, CPU known", RuntimeStats{Mem: ms, Goroutines: 12, CPUTime: 2 * time.Second, MemoryLimit: math.MaxInt64},
			"Status.JVM.Memory.Heap.Used=100 Status.JVM.Memory.Heap.Committed=350 Status.JVM.Memory.Heap.Max=-1 " +
				"Status.JVM.Memory.NonHeap.Used=21 Status.JVM.Memory.NonHeap.Committed=600 Status.JVM.Memory.NonHeap.Max=-1 " +
				"Status.JVM.Threads.Count=12 Status.JVM.GarbageCollector.Go.Count=7 Status.JVM.GarbageCollector.Go.Time=3 Status.JVM.CPU.Time=2e+09"},
		{"GOMEMLIMIT, CPU unknown", RuntimeStats{Mem: ms, Goroutines: 1, CPUTime: -1, MemoryLimit: 1 << 30},
			"Status.JVM.Memory.Heap.Used=100 Status.JVM.Memory.Heap.Committed=350 Status.JVM.Memory.Heap.Max=1.073741824e+09 " +
				"Status.JVM.Memory.NonHeap.Used=21 Status.JVM.Memory.NonHeap.Committed=600 Status.JVM.Memory.NonHeap.Max=-1 " +
				"Status.JVM.Threads.Count=1 Status.JVM.GarbageCollector.Go.Count=7 Status.JVM.GarbageCollector.Go.Time=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, m := range processMetrics(tc.stats) {
				parts = append(parts, m.GetName()+"="+strconvG(m.GetValue()))
			}
			if got := strings.Join(parts, " "); got != tc.want {
				t.Errorf("processMetrics:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestLogFileNamesInTheConfig(t *testing.T) {
	for _, tc := range []struct {
		log, stdout string
		ok          bool
	}{
		{"", "", true},
		{"tm.log", "tm.out", true},
		{"../tm.log", "", false},
		{"", "logs/tm.out", false},
	} {
		err := Config{ResourceManagerAddress: "localhost:6123", LogFile: tc.log, StdoutFile: tc.stdout}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("LogFile %q StdoutFile %q: Validate = %v, want ok %v", tc.log, tc.stdout, err, tc.ok)
		}
	}
}

// A name checkLogName accepts stays in the log directory.
func FuzzCheckLogName(f *testing.F) {
	for _, s := range []string{"taskmanager.log", "..", ".", "../x", "a/b", `a\b`, "", "x\x00y", "...", "..a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if checkLogName(name) != nil {
			return
		}
		dir := filepath.FromSlash("/var/log/tm")
		p := filepath.Join(dir, name)
		if filepath.Dir(p) != dir || filepath.Base(p) != name {
			t.Errorf("accepted %q, which is %s: not a file of %s", name, p, dir)
		}
	})
}
