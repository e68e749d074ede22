package yarndeploy

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

func TestJudgeStaging(t *testing.T) {
	self := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 20}
	notFound := &hadoop.RemoteError{Class: string(yarn.ErrApplicationNotFound), Message: "doesn't exist in RM"}
	tests := []struct {
		name  string
		entry string
		state yarn.ApplicationState
		err   error
		want  staleVerdict
	}{
		{"killed", "application_1700000000000_0003", yarn.StateKilled, nil, removeEntry},
		{"finished", "application_1700000000000_0004", yarn.StateFinished, nil, removeEntry},
		{"failed", "application_1700000000000_0005", yarn.StateFailed, nil, removeEntry},
		{"running", "application_1700000000000_0006", yarn.StateRunning, nil, keepEntry},
		{"accepted (another attempt may come)", "application_1700000000000_0007", yarn.StateAccepted, nil, keepEntry},
		{"forgotten by this ResourceManager", "application_1700000000000_0008", 0, notFound, removeEntry},
		{"another cluster's", "application_1600000000000_0008", 0, notFound, keepEntry},
		{"ResourceManager unreachable", "application_1700000000000_0009", 0, errors.New("connection refused"), keepEntry},
		{"self", self.String(), yarn.StateKilled, nil, keepEntry},
		{"not an application", "my-notes", yarn.StateKilled, nil, keepEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeStaging(tt.entry, self, tt.state, tt.err); got != tt.want {
				t.Errorf("judgeStaging(%s, %v, %v) = %v, want %v", tt.entry, tt.state, tt.err, got, tt.want)
			}
		})
	}
}

// TestDeploySweepsEndedApplications: a deployment deletes the staging
// directories its user's ended applications left (a `yarn application
// -kill` leaves one) and keeps those of applications that may still run,
// of another cluster, and anything else in the directory.
func TestDeploySweepsEndedApplications(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 30}
	killed := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 21}
	running := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 22}
	forgotten := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 2}
	foreign := yarn.ApplicationID{ClusterTimestamp: 1600000000000, ID: 5}
	rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8}, reports: []yarn.ApplicationState{yarn.StateRunning},
		others: map[yarn.ApplicationID]yarn.ApplicationState{killed: yarn.StateKilled, running: yarn.StateRunning}}
	var progress bytes.Buffer
	d := newDeployer(t, nil, Options{AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"),
		Progress: &progress, PollInterval: time.Millisecond, Logger: testLogger(t)})
	root := t.TempDir()
	d.rm = rm
	d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
	base := filepath.Join(root, "user", "alice", ".sluice")
	for _, name := range []string{killed.String(), running.String(), forgotten.String(), foreign.String(), "notes"} {
		if err := os.MkdirAll(filepath.Join(base, name, "ha"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "README"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"README", foreign.String(), running.String(), id.String(), "notes"}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left in the staging base: %v, want %v", left, want)
	}
	for _, gone := range []yarn.ApplicationID{killed, forgotten} {
		if _, err := os.Stat(filepath.Join(base, gone.String())); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("%s: %v, want it deleted", gone, err)
		}
	}
	for _, line := range []string{
		"Deleted the staging directory of ended application " + killed.String() + " (KILLED)",
		"Deleted the staging directory of ended application " + forgotten.String() + " (unknown to the ResourceManager)",
	} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress does not say %q:\n%s", line, progress.String())
		}
	}
}

// TestDeployRefusesATicketCacheOnlyLogin: on a Kerberized cluster a
// deployment whose containers would have no keytab is refused before
// anything is asked of YARN or uploaded.
func TestDeployRefusesATicketCacheOnlyLogin(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		secure  bool
		wantErr bool
	}{
		{"ticket cache on a secure cluster", map[string]string{"security.kerberos.login.use-ticket-cache": "true"}, true, true},
		{"principal without a keytab", map[string]string{"security.kerberos.login.principal": "alice@EXAMPLE.COM"}, true, true},
		{"keytab on a secure cluster", map[string]string{"security.kerberos.login.principal": "alice@EXAMPLE.COM",
			"security.kerberos.login.keytab": "/etc/alice.keytab", "yarn.security.kerberos.ship-local-keytab": "false"}, true, false},
		{"no login on an insecure cluster", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkContainerLogin(conf.FromMap(tt.props, conf.Source{Name: "test"}), tt.secure)
			if tt.wantErr != (err != nil) {
				t.Fatalf("checkContainerLogin = %v, want an error: %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrNoContainerKeytab) {
				t.Errorf("err = %v, want ErrNoContainerKeytab", err)
			}
			for _, m := range []string{"security.kerberos.login.keytab", "security.kerberos.login.principal", "nothing was uploaded"} {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err %q does not mention %q", err, m)
				}
			}
		})
	}
}
