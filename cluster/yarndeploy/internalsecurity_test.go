package yarndeploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/yarn"
)

// With security.ssl.internal.enabled false, every application gets a
// secret of its own for its internal RPCs: a PRIVATE resource of mode 0600
// that the ApplicationMaster and the TaskManagers localize, named by the
// shipped config.yaml, and another one for the next application.
func TestStagingShipsAPrivateSecretPerApplication(t *testing.T) {
	secrets := map[string]bool{}
	for n := int32(1); n <= 2; n++ {
		id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: n}
		rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8},
			reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateFailed}}
		var progress bytes.Buffer
		d := newDeployer(t, map[string]string{"security.ssl.internal.enabled": "false"}, Options{
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

// By default every application gets mutual TLS of its own: a CA's
// certificate and two keystores it signed (the ApplicationMaster's, the
// TaskManagers'), PRIVATE resources of mode 0600 localized under one link
// name each, named by the shipped config.yaml. No secret is shipped, the
// CA's key is not, and the next application's CA trusts none of them.
func TestStagingShipsPrivateCertificatesPerApplication(t *testing.T) {
	type shipped struct{ ca, am, tm []byte }
	var apps []shipped
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
			var tmFiles map[string]yarn.LocalResource
			raw, err := base64.StdEncoding.DecodeString(s.AMContainer.Environment[yarnam.EnvTaskManagerFiles])
			if err == nil {
				err = json.Unmarshal(raw, &tmFiles)
			}
			if err != nil {
				t.Fatal(err)
			}
			read := func(who string, files map[string]yarn.LocalResource, link string) []byte {
				t.Helper()
				r, ok := files[link]
				if !ok || r.Visibility != yarn.VisibilityPrivate {
					t.Fatalf("the %s' %s: %+v (present %v), want a PRIVATE resource", who, link, r, ok)
				}
				p := filepath.Join(root, filepath.FromSlash(r.URL.File))
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("the staged %s has mode %v, want 0600", p, fi.Mode().Perm())
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			app := shipped{ca: read("ApplicationMaster", s.AMContainer.LocalResources, FileInternalTruststore),
				am: read("ApplicationMaster", s.AMContainer.LocalResources, FileInternalKeystore),
				tm: read("TaskManagers", tmFiles, FileInternalKeystore)}
			if !bytes.Equal(app.ca, read("TaskManagers", tmFiles, FileInternalTruststore)) {
				t.Error("the ApplicationMaster and the TaskManagers trust different CAs")
			}
			if bytes.Equal(app.am, app.tm) {
				t.Error("the ApplicationMaster and the TaskManagers share a keystore")
			}
			for _, files := range []map[string]yarn.LocalResource{s.AMContainer.LocalResources, tmFiles} {
				if _, ok := files[conf.InternalSecretFileName]; ok {
					t.Error("a secret is shipped although the RPCs use mutual TLS")
				}
			}
			cfg, _ := os.ReadFile(filepath.Join(dir, yarnam.FileConfig))
			for _, kv := range []string{"security.ssl.internal.enabled: \"true\"", "security.ssl.internal.keystore: " + FileInternalKeystore,
				"security.ssl.internal.truststore: " + FileInternalTruststore} {
				if !strings.Contains(string(cfg), kv) && !strings.Contains(string(cfg), strings.ReplaceAll(kv, `"`, "")) {
					t.Errorf("config.yaml does not say %s:\n%s", kv, cfg)
				}
			}
			// Only the two keystores hold private keys (the CA's is not
			// staged).
			ents, _ := os.ReadDir(dir)
			keys := 0
			for _, e := range ents {
				if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); bytes.Contains(b, []byte("PRIVATE KEY-----")) {
					keys++
				}
			}
			if keys != 2 {
				t.Errorf("%d staged files hold a private key, want the 2 keystores", keys)
			}
			apps = append(apps, app)
		}
		if _, err := d.Deploy(context.Background()); err == nil {
			t.Fatal("Deploy succeeded against an ApplicationMaster that failed")
		}
		if !strings.Contains(progress.String(), "mutual TLS") {
			t.Errorf("progress:\n%s", progress.String())
		}
	}
	if len(apps) != 2 {
		t.Fatalf("%d submissions", len(apps))
	}
	// Each application's keystores are signed by its CA, and by no other.
	for i, app := range apps {
		for j, other := range apps {
			for role, ks := range map[string][]byte{"ApplicationMaster": other.am, "TaskManagers": other.tm} {
				err := verifies(ks, app.ca)
				if (i == j) != (err == nil) {
					t.Errorf("application %d's CA, application %d's %s keystore: %v", i+1, j+1, role, err)
				}
			}
		}
	}
}

// verifies checks that keystore's certificate is signed by the CA in
// truststore, for clients and servers.
func verifies(keystore, truststore []byte) error {
	cert, err := tls.X509KeyPair(keystore, keystore)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(truststore) {
		return errors.New("no CA in the truststore")
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}})
	return err
}

// A user's own security.ssl.internal.keystore is used as Flink takes it
// (a path on every node), also when given by Flink's shared
// security.ssl.keystore: nothing is generated or shipped for the internal
// RPCs, and the shipped config.yaml keeps the user's paths.
func TestStagingKeepsTheUsersInternalKeystore(t *testing.T) {
	for _, tc := range []struct{ name, keystoreKey, truststoreKey string }{
		{"internal keys", "security.ssl.internal.keystore", "security.ssl.internal.truststore"},
		{"Flink's shared keys", "security.ssl.keystore", "security.ssl.truststore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 3}
			rm := &fakeRM{id: id, maxCap: yarn.Resource{MemoryMB: 8192, VCores: 8},
				reports: []yarn.ApplicationState{yarn.StateAccepted, yarn.StateFailed}}
			var progress bytes.Buffer
			d := newDeployer(t, map[string]string{tc.keystoreKey: "/etc/sluice/node.pem", tc.truststoreKey: "/etc/sluice/ca.pem"}, Options{
				AppMaster: executable(t, "appmaster"), TaskManager: executable(t, "taskmanager"), Job: executable(t, "job"),
				Progress: &progress, PollInterval: time.Millisecond, Logger: testLogger(t),
			})
			root := t.TempDir()
			d.rm = rm
			d.dialFS = func(string) (stagingFS, error) { return localStaging{root: root}, nil }
			dir := filepath.Join(root, "user", "alice", ".sluice", id.String())
			submitted := false
			rm.onSubmit = func(s *yarn.SubmissionContext) {
				submitted = true
				for _, link := range []string{FileInternalKeystore, FileInternalTruststore, conf.InternalSecretFileName} {
					if _, ok := s.AMContainer.LocalResources[link]; ok {
						t.Errorf("%s is shipped although the user configured a keystore", link)
					}
				}
				cfg, _ := os.ReadFile(filepath.Join(dir, yarnam.FileConfig))
				for _, kv := range []string{tc.keystoreKey + ": /etc/sluice/node.pem", tc.truststoreKey + ": /etc/sluice/ca.pem"} {
					if !strings.Contains(string(cfg), kv) {
						t.Errorf("config.yaml does not say %s:\n%s", kv, cfg)
					}
				}
				if !strings.Contains(string(cfg), "security.ssl.internal.enabled: \"true\"") && !strings.Contains(string(cfg), "security.ssl.internal.enabled: true") {
					t.Errorf("config.yaml does not enable internal TLS:\n%s", cfg)
				}
			}
			if _, err := d.Deploy(context.Background()); err == nil {
				t.Fatal("Deploy succeeded against an ApplicationMaster that failed")
			}
			if !submitted {
				t.Fatal("nothing was submitted")
			}
			if want := "mutual TLS with /etc/sluice/node.pem (" + tc.keystoreKey + ")"; !strings.Contains(progress.String(), want) {
				t.Errorf("progress does not say %q:\n%s", want, progress.String())
			}
		})
	}
}
