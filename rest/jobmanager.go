package rest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
)

// The JobManager process's own endpoints, in Flink's shapes:
//
//	GET /jobmanager/thread-dump    {"threadInfos": [{threadName, stringifiedThreadInfo}]}: a dump of the process's goroutines
//	GET /jobmanager/environment    {"jvm": {version, arch, options}, "classpath"}: the Go runtime, the process's arguments
//	GET /jobmanager/logs           {"logs": [{name, size, mtime}]}: the files of Config.LogDir
//	GET /jobmanager/logs/:name     one of them, as text
//	GET /jobmanager/log            Config.LogFile of Config.LogDir, as text
//	GET /jobmanager/stdout         Config.StdoutFile of Config.LogDir, as text
//	GET /applications/overview     {"applications": []}

// ThreadInfo is one goroutine of a thread dump (Flink's
// ThreadDumpInfo.ThreadInfo): its header ("goroutine 1 [running]") as the
// thread's name, its whole stack as the thread's text.
type ThreadInfo struct {
	ThreadName            string `json:"threadName"`
	StringifiedThreadInfo string `json:"stringifiedThreadInfo"`
}

// ThreadDump is the body of GET /jobmanager/thread-dump.
type ThreadDump struct {
	ThreadInfos []ThreadInfo `json:"threadInfos"`
}

// ParseGoroutineDump splits a goroutine dump (runtime/pprof's goroutine
// profile at debug level 2, the form of a Go panic) into one ThreadInfo
// per goroutine.
func ParseGoroutineDump(dump []byte) []ThreadInfo {
	out := []ThreadInfo{}
	for _, block := range bytes.Split(bytes.TrimSpace(dump), []byte("\n\n")) {
		block = bytes.TrimSpace(block)
		if len(block) == 0 {
			continue
		}
		head, _, _ := bytes.Cut(block, []byte("\n"))
		out = append(out, ThreadInfo{ThreadName: strings.TrimSuffix(string(head), ":"), StringifiedThreadInfo: string(block) + "\n"})
	}
	return out
}

func (s *Server) getJobManagerThreadDump(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		writeError(w, http.StatusInternalServerError, "Internal server error.", "dumping the goroutines: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ThreadDump{ThreadInfos: ParseGoroutineDump(b.Bytes())})
}

// JVMInfo is the "jvm" of GET /jobmanager/environment: for a Go process,
// its runtime's version (runtime.Version), its platform (GOOS/GOARCH) and
// its command-line arguments.
type JVMInfo struct {
	Version string   `json:"version"`
	Arch    string   `json:"arch"`
	Options []string `json:"options"`
}

// EnvironmentInfo is the body of GET /jobmanager/environment. A Go
// binary has no classpath: it is empty.
type EnvironmentInfo struct {
	JVM       JVMInfo  `json:"jvm"`
	Classpath []string `json:"classpath"`
}

func (s *Server) getJobManagerEnvironment(w http.ResponseWriter, r *http.Request) {
	args := []string{}
	if len(os.Args) > 1 {
		args = append(args, os.Args[1:]...)
	}
	writeJSON(w, http.StatusOK, EnvironmentInfo{
		JVM:       JVMInfo{Version: runtime.Version(), Arch: runtime.GOOS + "/" + runtime.GOARCH, Options: args},
		Classpath: []string{},
	})
}

// LogInfo is one file of LogList; MTime is epoch ms.
type LogInfo struct {
	Name  string `json:"name"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"`
}

// LogList is the body of GET /jobmanager/logs.
type LogList struct {
	Logs []LogInfo `json:"logs"`
}

func (s *Server) getJobManagerLogs(w http.ResponseWriter, r *http.Request) {
	out := LogList{Logs: []LogInfo{}}
	if s.cfg.LogDir == "" {
		writeJSON(w, http.StatusOK, out)
		return
	}
	entries, err := os.ReadDir(s.cfg.LogDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusInternalServerError, "Internal server error.", fmt.Sprintf("listing the log directory %s (env.log.dir): %v", s.cfg.LogDir, err))
		return
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out.Logs = append(out.Logs, LogInfo{Name: e.Name(), Size: fi.Size(), MTime: fi.ModTime().UnixMilli()})
	}
	slices.SortFunc(out.Logs, func(a, b LogInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, out)
}

// serveLogFile answers a file of the log directory as text; name must be
// a file name (no directory), as GET /jobmanager/logs lists it.
func (s *Server) serveLogFile(w http.ResponseWriter, r *http.Request, name, what string) {
	if s.cfg.LogDir == "" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("this JobManager keeps no %s: it has no log directory (env.log.dir)", what))
		return
	}
	if !validLogName(name) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not the name of a log file (see GET /jobmanager/logs)", name))
		return
	}
	f, err := os.Open(filepath.Join(s.cfg.LogDir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("the %s %s is not in the log directory %s (see GET /jobmanager/logs)", what, name, s.cfg.LogDir))
			return
		}
		writeError(w, http.StatusInternalServerError, "Internal server error.", err.Error())
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is not a log file", name))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

func (s *Server) getJobManagerLogFile(w http.ResponseWriter, r *http.Request) {
	s.serveLogFile(w, r, r.PathValue("filename"), "log file")
}

func (s *Server) getJobManagerLog(w http.ResponseWriter, r *http.Request) {
	s.serveLogFile(w, r, s.cfg.LogFile, "log")
}

func (s *Server) getJobManagerStdout(w http.ResponseWriter, r *http.Request) {
	s.serveLogFile(w, r, s.cfg.StdoutFile, "standard output")
}

// ApplicationsOverview is the body of GET /applications/overview (Flink
// 2.3's MultipleApplicationsDetails). Sluice has no applications, Flink's
// grouping of the jobs of one application-mode program: the list is
// empty; its jobs are at GET /jobs/overview.
type ApplicationsOverview struct {
	Applications []struct{} `json:"applications"`
}

func (s *Server) getApplicationsOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ApplicationsOverview{Applications: []struct{}{}})
}
