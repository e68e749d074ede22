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

	"github.com/sluice/sluice/rest/restapi"
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

// ParseGoroutineDump splits a goroutine dump (runtime/pprof's goroutine
// profile at debug level 2, the form of a Go panic) into one ThreadInfo
// per goroutine.
func ParseGoroutineDump(dump []byte) []restapi.ThreadInfo {
	out := []restapi.ThreadInfo{}
	for _, block := range bytes.Split(bytes.TrimSpace(dump), []byte("\n\n")) {
		block = bytes.TrimSpace(block)
		if len(block) == 0 {
			continue
		}
		head, _, _ := bytes.Cut(block, []byte("\n"))
		out = append(out, restapi.ThreadInfo{ThreadName: strings.TrimSuffix(string(head), ":"), StringifiedThreadInfo: string(block) + "\n"})
	}
	return out
}

func (s *Server) getJobManagerThreadDump(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		writeError(w, http.StatusInternalServerError, "Internal server error.", "dumping the goroutines: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, restapi.ThreadDump{ThreadInfos: ParseGoroutineDump(b.Bytes())})
}

func (s *Server) getJobManagerEnvironment(w http.ResponseWriter, r *http.Request) {
	args := []string{}
	if len(os.Args) > 1 {
		args = append(args, os.Args[1:]...)
	}
	writeJSON(w, http.StatusOK, restapi.EnvironmentInfo{
		JVM:       restapi.JVMInfo{Version: runtime.Version(), Arch: runtime.GOOS + "/" + runtime.GOARCH, Options: args},
		Classpath: []string{},
	})
}

func (s *Server) getYARNApplication(w http.ResponseWriter, r *http.Request) {
	app, err := s.backend.YARNApplication(r.Context())
	if err != nil {
		s.writeBackendError(w, r, err)
		return
	}
	if app.Containers == nil {
		app.Containers = []restapi.YARNContainer{}
	}
	writeJSON(w, http.StatusOK, app)
}

func (s *Server) getJobManagerLogs(w http.ResponseWriter, r *http.Request) {
	out := restapi.LogList{Logs: []restapi.LogInfo{}}
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
		out.Logs = append(out.Logs, restapi.LogInfo{Name: e.Name(), Size: fi.Size(), MTime: fi.ModTime().UnixMilli()})
	}
	slices.SortFunc(out.Logs, func(a, b restapi.LogInfo) int { return strings.Compare(a.Name, b.Name) })
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

func (s *Server) getApplicationsOverview(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, restapi.ApplicationsOverview{Applications: []struct{}{}})
}
