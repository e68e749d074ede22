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

// TestStagingShipsARESTTokenToTheApplicationMaster: every application gets
// a REST token of its own, mode 0600 in its staging directory, a PRIVATE
// resource of the ApplicationMaster and not of the TaskManagers, named by
// the shipped config.yaml (which does not hold it); the client reads it
// back from the staging directory. yarn.security.rest-token.enabled false
// ships none, and a token file of the user's own is used as it is.
func TestStagingShipsARESTTokenToTheApplicationMaster(t *testing.T) {
	for _, tc := range []struct {
		name      string
		props     map[string]string
		generated bool
	}{
		{name: "by default", generated: true},
		{name: "turned off", props: map[string]string{"yarn.security.rest-token.enabled": "false"}},
		{name: "the user's own", props: map[string]string{"security.rest.token-file": "/etc/sluice/token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := map[string]bool{}
			for n := int32(1); n <= 2; n++ {
				id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: n}
				rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8},
					reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateFailed}}
				var progress bytes.Buffer
				d := newDeployer(t, tc.props, Options{
					AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"), Job: executable(t, "job"),
					Progress: &progress, PollInterval: time.Millisecond, Logger: testLogger(t),
				})
				root := t.TempDir()
				d.rm = rm
				d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
				dir := filepath.Join(root, "user", "alice", ".sluice", id.String())
				var staged []byte
				rm.onSubmit = func(s *yarn.SubmissionContext) {
					r, ok := s.AMContainer.LocalResources[FileRESTToken]
					var tmFiles map[string]yarn.LocalResource
					raw, err := base64.StdEncoding.DecodeString(s.AMContainer.Environment[yarnam.EnvTaskManagerFiles])
					if err == nil {
						err = json.Unmarshal(raw, &tmFiles)
					}
					if err != nil {
						t.Fatal(err)
					}
					if _, inTM := tmFiles[FileRESTToken]; inTM {
						t.Errorf("the TaskManagers get the REST token")
					}
					cfg, _ := os.ReadFile(filepath.Join(dir, yarnam.FileConfig))
					if !tc.generated {
						if ok {
							t.Errorf("the ApplicationMaster gets a generated REST token: %+v", r)
						}
						if want := tc.props["security.rest.token-file"]; want != "" && !strings.Contains(string(cfg), "security.rest.token-file: "+want) {
							t.Errorf("config.yaml does not keep the user's token file:\n%s", cfg)
						}
						return
					}
					if !ok || r.Visibility != yarn.VisibilityPrivate {
						t.Errorf("the ApplicationMaster's %s: %+v (present %v), want a PRIVATE resource", FileRESTToken, r, ok)
					}
					fi, err := os.Stat(filepath.Join(dir, FileRESTToken))
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != 0o600 {
						t.Errorf("the staged REST token has mode %v, want 0600", fi.Mode().Perm())
					}
					staged, _ = os.ReadFile(filepath.Join(dir, FileRESTToken))
					if len(bytes.TrimSpace(staged)) < 32 {
						t.Errorf("the staged token is %q", staged)
					}
					if !strings.Contains(string(cfg), conf.RESTTokenFile.Key()+": "+FileRESTToken) {
						t.Errorf("config.yaml does not name the token file:\n%s", cfg)
					}
					if strings.Contains(string(cfg), strings.TrimSpace(string(staged))) {
						t.Error("config.yaml holds the token itself")
					}
					// The owner's later commands read it back.
					got, err := d.RESTToken(id)
					if err != nil || string(got) != strings.TrimSpace(string(staged)) {
						t.Errorf("RESTToken(%s) = %q, %v; want the staged token", id, got, err)
					}
				}
				if _, err := d.Deploy(context.Background()); err == nil {
					t.Fatal("the deployment of an application that failed succeeded")
				}
				if tc.generated {
					tokens[string(staged)] = true
				}
			}
			if tc.generated && len(tokens) != 2 {
				t.Errorf("two applications got %d distinct tokens", len(tokens))
			}
		})
	}
}
