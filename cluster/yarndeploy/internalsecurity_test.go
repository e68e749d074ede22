package yarndeploy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/yarn"
)

// Every application gets a secret of its own for its internal RPCs: a
// PRIVATE resource of mode 0600 that the ApplicationMaster and the
// TaskManagers localize, named by the shipped config.yaml, and another one
// for the next application.
func TestStagingShipsAPrivateSecretPerApplication(t *testing.T) {
	secrets := map[string]bool{}
	for n := int32(1); n <= 2; n++ {
		id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: n}
		rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8},
			reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateFailed}}
		var progress bytes.Buffer
		d := newDeployer(t, nil, Options{
			AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"), Job: executable(t, "job"),
			Progress: &progress, PollInterval: time.Millisecond, Logger: testLogger(t),
		})
		root := t.TempDir()
		d.rm = rm
		d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
		dir := filepath.Join(root, "user", "alice", ".sluice", id.String())
		rm.onSubmit = func(s *yarn.SubmissionContext) {
			r, ok := s.AMContainer.LocalResources[conf.InternalSecretFileName]
			if !ok || r.Visibility != yarn.VisibilityPrivate {
				t.Errorf("the ApplicationMaster's %s: %+v (present %v), want a PRIVATE resource", conf.InternalSecretFileName, r, ok)
			}
			fi, err := os.Stat(filepath.Join(dir, conf.InternalSecretFileName))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("the staged secret has mode %v, want 0600", fi.Mode().Perm())
			}
			b, _ := os.ReadFile(filepath.Join(dir, conf.InternalSecretFileName))
			if len(strings.TrimSpace(string(b))) < 32 {
				t.Errorf("the staged secret is %q", b)
			}
			secrets[string(b)] = true
			var tmFiles map[string]yarn.LocalResource
			raw, err := base64.StdEncoding.DecodeString(s.AMContainer.Environment[yarnam.EnvTaskManagerFiles])
			if err == nil {
				err = json.Unmarshal(raw, &tmFiles)
			}
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := tmFiles[conf.InternalSecretFileName]; !ok || r.Visibility != yarn.VisibilityPrivate {
				t.Errorf("the TaskManagers' %s: %+v (present %v), want a PRIVATE resource", conf.InternalSecretFileName, r, ok)
			}
			cfg, _ := os.ReadFile(filepath.Join(dir, yarnam.FileConfig))
			if !strings.Contains(string(cfg), conf.InternalSecretFile.Key()+": "+conf.InternalSecretFileName) {
				t.Errorf("config.yaml does not name the secret file:\n%s", cfg)
			}
			if strings.Contains(string(cfg), strings.TrimSpace(string(b))) {
				t.Error("config.yaml holds the secret itself")
			}
		}
		if _, err := d.Deploy(context.Background()); err == nil {
			t.Fatal("Deploy succeeded against an ApplicationMaster that failed")
		}
		if !strings.Contains(progress.String(), "(mode 600)") || strings.Contains(progress.String(), "secret:") {
			t.Errorf("progress:\n%s", progress.String())
		}
	}
	if len(secrets) != 2 {
		t.Errorf("two applications shipped %d distinct secrets, want 2", len(secrets))
	}
}
