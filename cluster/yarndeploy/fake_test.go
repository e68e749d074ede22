package yarndeploy

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// localStaging is a stagingFS on the local filesystem: the HDFS paths of
// every authority live under root.
type localStaging struct {
	fs.Local
	root string
}

func (l localStaging) p(path string) string { return filepath.Join(l.root, filepath.FromSlash(path)) }

func (l localStaging) Create(path string) (fs.File, error)     { return l.Local.Create(l.p(path)) }
func (l localStaging) Open(path string) (io.ReadCloser, error) { return l.Local.Open(l.p(path)) }
func (l localStaging) Rename(src, dst string) error            { return l.Local.Rename(l.p(src), l.p(dst)) }
func (l localStaging) Remove(path string) error                { return l.Local.Remove(l.p(path)) }
func (l localStaging) Stat(path string) (iofs.FileInfo, error) {
	return l.Local.Stat(l.p(path))
}
func (l localStaging) ReadDir(path string) ([]iofs.FileInfo, error) {
	return l.Local.ReadDir(l.p(path))
}
func (l localStaging) RemoveAll(path string) error { return l.Local.RemoveAll(l.p(path)) }
func (l localStaging) MkdirAll(path string) error  { return l.Local.MkdirAll(l.p(path)) }
func (l localStaging) MkdirAllPrivate(path string) error {
	return l.Local.MkdirAllPrivate(l.p(path))
}
func (l localStaging) CreatePrivate(path string) (fs.File, error) {
	return l.Local.CreatePrivate(l.p(path))
}
func (l localStaging) Mkdir(path string, perm iofs.FileMode) error {
	return os.Mkdir(l.p(path), perm)
}
func (l localStaging) Chmod(path string, perm iofs.FileMode) error {
	return os.Chmod(l.p(path), perm)
}
func (l localStaging) Close() error { return nil }

// fakeRM is a ResourceManager for Deploy: it hands out one application id,
// fails the submission with submitErr if set, and answers reports from
// reports (the last one repeated). It records what it was asked.
type fakeRM struct {
	id        yarn.ApplicationID
	maxCap    yarn.Resource
	submitErr error
	reports   []yarn.ApplicationState
	// onSubmit runs when the application is submitted.
	onSubmit func(s *yarn.SubmissionContext)
	// onReport runs before each report is answered (n counts from 1).
	onReport func(n int)
	// others are the states of applications other than id (reports of
	// them are not counted); one in neither is not found.
	others map[yarn.ApplicationID]yarn.ApplicationState

	mu        sync.Mutex
	submitted []*yarn.SubmissionContext
	nReports  int
	killed    []string // diagnostics of each kill
}

func (f *fakeRM) GetNewApplication(context.Context) (*yarn.NewApplication, error) {
	return &yarn.NewApplication{ID: f.id, MaxCapability: f.maxCap}, nil
}

func (f *fakeRM) CheckQueue(context.Context, string) error { return nil }

func (f *fakeRM) SubmitApplication(_ context.Context, s *yarn.SubmissionContext) error {
	if f.onSubmit != nil {
		f.onSubmit(s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, s)
	return f.submitErr
}

func (f *fakeRM) GetApplicationReport(ctx context.Context, id yarn.ApplicationID) (*yarn.ApplicationReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if id != f.id {
		if st, ok := f.others[id]; ok {
			return &yarn.ApplicationReport{ID: id, State: st}, nil
		}
		return nil, &hadoop.RemoteError{Class: string(yarn.ErrApplicationNotFound), Message: "Application with id '" + id.String() + "' doesn't exist in RM."}
	}
	f.mu.Lock()
	f.nReports++
	n := f.nReports
	f.mu.Unlock()
	if f.onReport != nil {
		f.onReport(n)
	}
	st := f.reports[min(n, len(f.reports))-1]
	r := &yarn.ApplicationReport{ID: id, State: st, Diagnostics: "[Mon Jan 01 00:00:00 +0000 2026] waiting for AM container to be allocated"}
	if st.Terminal() {
		r.FinalStatus, r.Diagnostics = yarn.FinalFailed, "AM container exited with exitCode: 1"
	}
	return r, nil
}

func (f *fakeRM) ForceKillApplication(_ context.Context, id yarn.ApplicationID, diagnostics string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, diagnostics)
	return true, nil
}

func (f *fakeRM) WaitForState(context.Context, yarn.ApplicationID, time.Duration, ...yarn.ApplicationState) (*yarn.ApplicationReport, error) {
	return nil, errors.New("fakeRM: WaitForState not scripted")
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
