package taskmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluice/sluice/cluster/clusterpb"
)

// The TaskManager's own files, goroutines and metrics, which the
// JobManager's REST API asks for (GET /taskmanagers/:id/logs, log,
// stdout, logs/:name, thread-dump, metrics). Files are served only from the
// log directory: a name with a directory part is refused, and the
// directory is opened as an os.Root, so that no symbolic link leads out of
// it either.

// ErrNoLogFile: a log file asked for is not in the log directory
// (codes.NotFound).
var ErrNoLogFile = errors.New("taskmanager: no such log file")

// logChunk is the size of the data messages of ReadLog.
const logChunk = 64 << 10

// maxThreadDump bounds the goroutine dump ThreadDump returns.
const maxThreadDump = 16 << 20

// checkLogName reports whether name is a plain file name: not empty, not
// "." or "..", without a separator or a NUL.
func checkLogName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return withCode(codes.InvalidArgument, fmt.Errorf("%w: %q is not the name of a file of the log directory", ErrInvalidRequest, name))
	}
	return nil
}

// ListLogs implements clusterpb.TaskManagerServer: the regular files of the
// log directory, sorted by name (symbolic links and directories are left
// out).
func (tm *TaskManager) ListLogs(ctx context.Context, _ *clusterpb.ListLogsRequest) (*clusterpb.ListLogsResponse, error) {
	entries, err := os.ReadDir(tm.logDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("taskmanager: listing the log directory %s: %w", tm.logDir, err)
	}
	out := &clusterpb.ListLogsResponse{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out.Files = append(out.Files, &clusterpb.LogFileInfo{Name: e.Name(), Size: fi.Size(), MtimeMs: fi.ModTime().UnixMilli()})
	}
	slices.SortFunc(out.Files, func(a, b *clusterpb.LogFileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// logFileOf is the name of the file req asks for.
func (tm *TaskManager) logFileOf(req *clusterpb.ReadLogRequest) (string, error) {
	switch req.GetKind() {
	case clusterpb.LogFileKind_LOG_FILE_MAIN:
		return tm.cfg.LogFile, nil
	case clusterpb.LogFileKind_LOG_FILE_STDOUT:
		return tm.cfg.StdoutFile, nil
	case clusterpb.LogFileKind_LOG_FILE_NAMED:
		return req.GetName(), checkLogName(req.GetName())
	}
	return "", withCode(codes.InvalidArgument, fmt.Errorf("%w: log file kind %v", ErrInvalidRequest, req.GetKind()))
}

// ReadLog implements clusterpb.TaskManagerServer: a header, then the
// file's bytes up to its size when opened; of a file longer than
// Config.MaxLogFileBytes only the end, that many bytes.
func (tm *TaskManager) ReadLog(req *clusterpb.ReadLogRequest, stream grpc.ServerStreamingServer[clusterpb.LogChunk]) error {
	name, err := tm.logFileOf(req)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(tm.logDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return withCode(codes.NotFound, fmt.Errorf("%w: %s: the log directory %s does not exist", ErrNoLogFile, name, tm.logDir))
		}
		return fmt.Errorf("taskmanager: opening the log directory: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return withCode(codes.NotFound, fmt.Errorf("%w: %s is not in the log directory %s", ErrNoLogFile, name, tm.logDir))
		}
		// A link out of the directory, or a file we may not read.
		return withCode(codes.NotFound, fmt.Errorf("%w: %s of the log directory %s cannot be read: %v", ErrNoLogFile, name, tm.logDir, err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("taskmanager: log file %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return withCode(codes.NotFound, fmt.Errorf("%w: %s of the log directory %s is not a regular file", ErrNoLogFile, name, tm.logDir))
	}
	size := fi.Size()
	offset := max(0, size-tm.cfg.MaxLogFileBytes)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("taskmanager: log file %s: %w", name, err)
	}
	if err := stream.Send(&clusterpb.LogChunk{Msg: &clusterpb.LogChunk_Header{Header: &clusterpb.LogFileHeader{
		Name: name, Size: size, Offset: offset, MtimeMs: fi.ModTime().UnixMilli()}}}); err != nil {
		return err
	}
	r := io.LimitReader(f, size-offset)
	buf := make([]byte, logChunk)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if serr := stream.Send(&clusterpb.LogChunk{Msg: &clusterpb.LogChunk_Data{Data: buf[:n]}}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("taskmanager: reading log file %s: %w", name, err)
		}
	}
}

// ThreadDump implements clusterpb.TaskManagerServer: the process's
// goroutines, at most 16 MiB of them.
func (tm *TaskManager) ThreadDump(ctx context.Context, _ *clusterpb.ThreadDumpRequest) (*clusterpb.ThreadDumpResponse, error) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		return nil, fmt.Errorf("taskmanager: dumping the goroutines: %w", err)
	}
	out := &clusterpb.ThreadDumpResponse{Dump: b.Bytes()}
	if len(out.Dump) > maxThreadDump {
		// Cut at the last goroutine that fits.
		cut := out.Dump[:maxThreadDump]
		if i := bytes.LastIndex(cut, []byte("\n\n")); i > 0 {
			cut = cut[:i+1]
		}
		out.Dump, out.Truncated = cut, true
	}
	return out, nil
}

// ProcessMetrics implements clusterpb.TaskManagerServer.
func (tm *TaskManager) ProcessMetrics(ctx context.Context, _ *clusterpb.ProcessMetricsRequest) (*clusterpb.ProcessMetricsResponse, error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &clusterpb.ProcessMetricsResponse{Metrics: processMetrics(RuntimeStats{
		Mem: ms, Goroutines: runtime.NumGoroutine(), CPUTime: processCPUTime(), MemoryLimit: debug.SetMemoryLimit(-1),
	})}, nil
}

// RuntimeStats are the readings of the Go runtime ProcessMetrics reports.
type RuntimeStats struct {
	Mem        runtime.MemStats
	Goroutines int
	// CPUTime is the process's user and system CPU time; negative where
	// the platform does not tell.
	CPUTime time.Duration
	// MemoryLimit is the runtime's soft memory limit (GOMEMLIMIT);
	// math.MaxInt64 when there is none.
	MemoryLimit int64
}

// processMetrics names a Go process's runtime readings after the JVM
// metrics of a Flink TaskManager (Status.JVM.*) they stand for:
//
//	Status.JVM.Memory.Heap.Used        bytes of live and not yet swept heap objects (HeapAlloc)
//	Status.JVM.Memory.Heap.Committed   heap memory obtained from the OS and not returned (HeapSys - HeapReleased)
//	Status.JVM.Memory.Heap.Max         the soft memory limit (GOMEMLIMIT), -1 without one (as a JVM without -Xmx... reports an undefined max)
//	Status.JVM.Memory.NonHeap.Used     the runtime's other memory in use: stacks, span and cache structures, GC metadata, profiling buckets, other
//	Status.JVM.Memory.NonHeap.Committed  all memory obtained from the OS but the heap's (Sys - HeapSys)
//	Status.JVM.Memory.NonHeap.Max      -1: no limit
//	Status.JVM.Threads.Count           goroutines
//	Status.JVM.GarbageCollector.Go.Count  completed GC cycles
//	Status.JVM.GarbageCollector.Go.Time   total stop-the-world pause time, ms
//	Status.JVM.CPU.Time                user and system CPU time of the process, ns (left out where unknown)
func processMetrics(s RuntimeStats) []*clusterpb.ProcessMetric {
	m := &s.Mem
	heapMax := float64(-1)
	if s.MemoryLimit > 0 && s.MemoryLimit < math.MaxInt64 {
		heapMax = float64(s.MemoryLimit)
	}
	nonHeapUsed := m.StackInuse + m.MSpanInuse + m.MCacheInuse + m.BuckHashSys + m.GCSys + m.OtherSys
	out := []*clusterpb.ProcessMetric{
		{Name: "Status.JVM.Memory.Heap.Used", Value: float64(m.HeapAlloc)},
		{Name: "Status.JVM.Memory.Heap.Committed", Value: float64(m.HeapSys - m.HeapReleased)},
		{Name: "Status.JVM.Memory.Heap.Max", Value: heapMax},
		{Name: "Status.JVM.Memory.NonHeap.Used", Value: float64(nonHeapUsed)},
		{Name: "Status.JVM.Memory.NonHeap.Committed", Value: float64(m.Sys - m.HeapSys)},
		{Name: "Status.JVM.Memory.NonHeap.Max", Value: -1},
		{Name: "Status.JVM.Threads.Count", Value: float64(s.Goroutines)},
		{Name: "Status.JVM.GarbageCollector.Go.Count", Value: float64(m.NumGC)},
		{Name: "Status.JVM.GarbageCollector.Go.Time", Value: float64(m.PauseTotalNs / 1e6)},
	}
	if s.CPUTime >= 0 {
		out = append(out, &clusterpb.ProcessMetric{Name: "Status.JVM.CPU.Time", Value: float64(s.CPUTime.Nanoseconds())})
	}
	return out
}
