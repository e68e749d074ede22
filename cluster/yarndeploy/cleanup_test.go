package yarndeploy

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// TestDeployRemovesStagingOnFailure deploys against a fake ResourceManager
// with the staging directory on the local filesystem: whenever the
// deployment fails after staging, the directory is gone, the error names the
// cause, and an application YARN may still run is killed.
func TestDeployRemovesStagingOnFailure(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 7}
	refused := &hadoop.RemoteError{Class: string(yarn.ErrInvalidResourceRequest), Message: "Invalid resource request, requested resource type=[memory-mb] < 0"}
	tests := []struct {
		name string
		rm   func(cancel context.CancelFunc) *fakeRM
		// want: the error matches wantIs and mentions wantMsg; the
		// progress mentions wantReason; wantKill says whether the
		// application was killed.
		wantIs     error
		wantMsg    []string
		wantReason string
		wantKill   bool
	}{
		{
			name: "submission refused",
			rm: func(context.CancelFunc) *fakeRM {
				return &fakeRM{submitErr: refused}
			},
			wantIs: yarn.ErrInvalidResourceRequest, wantMsg: []string{"submitting " + id.String(), "requested resource type"},
			wantReason: "(submission failed)",
		},
		{
			name: "cancelled while waiting for the ApplicationMaster",
			rm: func(cancel context.CancelFunc) *fakeRM {
				return &fakeRM{reports: []yarn.ApplicationState{yarn.StateSubmitted, yarn.StateAccepted}, onReport: func(n int) {
					if n == 3 {
						cancel() // the user gives up while the application is ACCEPTED
					}
				}}
			},
			wantIs: context.Canceled, wantMsg: []string{"waiting for " + id.String() + " to run (it is ACCEPTED)"},
			wantReason: "(deployment failed)", wantKill: true,
		},
		{
			name: "cancelled during a report",
			rm: func(cancel context.CancelFunc) *fakeRM {
				rm := &fakeRM{reports: []yarn.ApplicationState{yarn.StateAccepted}}
				rm.onSubmit = func(*yarn.SubmissionContext) { cancel() }
				return rm
			},
			wantIs: context.Canceled, wantMsg: []string{"waiting for " + id.String() + " to run"},
			wantReason: "(deployment failed)", wantKill: true,
		},
		{
			name: "ApplicationMaster failed before running",
			rm: func(context.CancelFunc) *fakeRM {
				return &fakeRM{reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateFailed}}
			},
			wantIs: yarn.ErrApplicationFailed, wantMsg: []string{id.String(), "exitCode: 1"},
			wantReason: "(deployment failed)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rm := tt.rm(cancel)
			rm.id, rm.maxCap = id, yarn.Resource{MemoryMB: 8192, VCores: 8}
			var progress bytes.Buffer
			d := newDeployer(t, nil, Options{
				AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"), Job: executable(t, "job"),
				Progress: &progress, PollInterval: time.Millisecond, Logger: testLogger(t),
			})
			root := t.TempDir()
			d.rm = rm
			d.dialFS = func(authority string) (stagingFS, error) {
				if authority != "nn:8020" {
					t.Errorf("staging on %q, want nn:8020", authority)
				}
				return localStaging{root: root}, nil
			}
			dir := filepath.Join(root, "user", "alice", ".sluice", id.String())
			var staged []string
			prev := rm.onSubmit
			rm.onSubmit = func(s *yarn.SubmissionContext) {
				// What the ApplicationMaster would localize is there.
				for name, r := range s.AMContainer.LocalResources {
					if filepath.Dir(filepath.Join(root, filepath.FromSlash(r.URL.File))) != dir {
						t.Errorf("%s is staged at %s, outside %s", name, r.URL.File, dir)
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(r.URL.File))); err != nil {
						t.Errorf("at submission: %v", err)
					}
					staged = append(staged, name)
				}
				if prev != nil {
					prev(s)
				}
			}

			app, err := d.Deploy(ctx)
			if err == nil {
				t.Fatalf("Deploy succeeded: %+v", app)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want one matching %v", err, tt.wantIs)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err %q does not mention %q", err, m)
				}
			}
			// appmaster, job, config.yaml, core-site.xml, the internal
			// keystore and truststore, and the REST token.
			if len(staged) != 7 {
				t.Errorf("staged at submission: %v", staged)
			}
			if _, err := os.Stat(dir); !errors.Is(err, iofs.ErrNotExist) {
				t.Errorf("staging directory after the failure: %v", err)
			}
			if _, err := os.Stat(filepath.Dir(dir)); err != nil {
				t.Errorf("the staging base went with the application's directory: %v", err)
			}
			if want := "Deleted the staging directory hdfs://nn:8020/user/alice/.sluice/" + id.String() + " " + tt.wantReason; !strings.Contains(progress.String(), want) {
				t.Errorf("progress does not say %q:\n%s", want, progress.String())
			}
			rm.mu.Lock()
			defer rm.mu.Unlock()
			if len(rm.submitted) != 1 {
				t.Errorf("%d submissions, want 1", len(rm.submitted))
			}
			if tt.wantKill != (len(rm.killed) == 1) || len(rm.killed) > 1 {
				t.Errorf("kills %q, want a kill: %v", rm.killed, tt.wantKill)
			}
			if tt.wantKill && !strings.Contains(rm.killed[0], "deployment aborted") {
				t.Errorf("kill diagnostics %q", rm.killed[0])
			}
		})
	}
}

// TestDeployStagingFailureLeavesNothing: a staging directory that cannot be
// filled is removed before anything is submitted.
func TestDeployStagingFailureLeavesNothing(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 8}
	rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8}}
	am := executable(t, "appmaster")
	d := newDeployer(t, nil, Options{AppMaster: am, TaskManager: executable(t, "taskmanager"), Logger: testLogger(t)})
	root := t.TempDir()
	d.rm = rm
	d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
	// The binary disappears between New and Deploy.
	if err := os.Remove(am); err != nil {
		t.Fatal(err)
	}
	_, err := d.Deploy(context.Background())
	if !errors.Is(err, ErrStaging) || !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrStaging for the missing binary", err)
	}
	if _, err := os.Stat(filepath.Join(root, "user", "alice", ".sluice", id.String())); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("staging directory after the failure: %v", err)
	}
	if len(rm.submitted) != 0 {
		t.Errorf("submitted %d times", len(rm.submitted))
	}
}

// TestDeployRuns is the fake's happy path: the staging directory stays.
func TestDeployRuns(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 9}
	rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8}, reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateRunning}}
	d := newDeployer(t, nil, Options{AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"), PollInterval: time.Millisecond, Logger: testLogger(t)})
	root := t.TempDir()
	d.rm = rm
	d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
	app, err := d.Deploy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if app.ID != id || app.StagingDir.String() != "hdfs://nn:8020/user/alice/.sluice/"+id.String() {
		t.Errorf("application %v staged in %v", app.ID, app.StagingDir)
	}
	dir := filepath.Join(root, "user", "alice", ".sluice", id.String())
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("staging directory %v, %v; want mode 700", fi, err)
	}
	for _, name := range []string{yarnam.FileAppMaster, yarnam.FileTaskManager, yarnam.FileConfig, yarnam.FileHadoopConf} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	if len(rm.killed) != 0 {
		t.Errorf("killed: %q", rm.killed)
	}
}
