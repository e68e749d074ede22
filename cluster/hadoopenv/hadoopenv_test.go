package hadoopenv

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
)

// confDir writes a core-site.xml with the given properties.
func confDir(t *testing.T, props map[string]string) string {
	t.Helper()
	d := t.TempDir()
	var b strings.Builder
	b.WriteString("<configuration>\n")
	for k, v := range props {
		b.WriteString("<property><name>" + k + "</name><value>" + v + "</value></property>\n")
	}
	b.WriteString("</configuration>\n")
	if err := os.WriteFile(filepath.Join(d, "core-site.xml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSetup(t *testing.T) {
	simple := confDir(t, map[string]string{"fs.defaultFS": "hdfs://nn:8020"})
	secure := confDir(t, map[string]string{"fs.defaultFS": "hdfs://nn:8020", "hadoop.security.authentication": "kerberos"})
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "core-site.xml"), []byte("<configuration><property>"), 0o644)
	missingKeytab := filepath.Join(t.TempDir(), "none.keytab")
	krb5 := filepath.Join(t.TempDir(), "krb5.conf")
	os.WriteFile(krb5, []byte("[libdefaults]\n  default_realm = R\n[realms]\n  R = {\n    kdc = localhost:1\n  }\n"), 0o644)

	for _, tc := range []struct {
		name     string
		env      map[string]string
		settings map[string]string
		// want: the default FS seen, a warning about the missing login,
		// or an error of kind errIs / containing errText.
		defaultFS string
		warn      bool
		errIs     error
		errText   string
	}{
		{name: "no Hadoop configuration: Hadoop's defaults", defaultFS: "file:///"},
		{name: "a simple cluster: no login", env: map[string]string{"HADOOP_CONF_DIR": simple}, defaultFS: "hdfs://nn:8020"},
		{name: "a simple cluster ignores a configured keytab", env: map[string]string{"HADOOP_CONF_DIR": simple},
			settings: map[string]string{"security.kerberos.login.keytab": missingKeytab, "security.kerberos.login.principal": "p@R"}, defaultFS: "hdfs://nn:8020"},
		{name: "a secure cluster without a login: a warning", env: map[string]string{"HADOOP_CONF_DIR": secure}, defaultFS: "hdfs://nn:8020", warn: true},
		{name: "a secure cluster, a container without a keytab: a warning", env: map[string]string{"HADOOP_CONF_DIR": secure, EnvContainerID: "container_1_0001_01_000002"},
			defaultFS: "hdfs://nn:8020", warn: true},
		{name: "a secure cluster, a keytab that is not there", env: map[string]string{"HADOOP_CONF_DIR": secure},
			settings: map[string]string{"security.kerberos.login.keytab": missingKeytab, "security.kerberos.login.principal": "p@R",
				"security.kerberos.krb5-conf.path": krb5},
			errIs: kerberos.ErrKeytab, errText: "taskmanager: Kerberos login"},
		{name: "HADOOP_CONF_DIR not a directory", env: map[string]string{"HADOOP_CONF_DIR": filepath.Join(simple, "core-site.xml")},
			errIs: hadoop.ErrBadConfig, errText: "taskmanager: the Hadoop configuration"},
		{name: "a malformed site file", env: map[string]string{"HADOOP_CONF_DIR": broken}, errText: "core-site.xml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := conf.FromMap(tc.settings, conf.Source{Name: "test"})
			p, err := Setup(c, Options{Getenv: func(k string) string { return tc.env[k] }, Component: "taskmanager",
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if tc.errIs != nil || tc.errText != "" {
				if err == nil {
					t.Fatalf("Setup succeeded; want an error")
				}
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Errorf("error %v; want %v", err, tc.errIs)
				}
				if !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("error %q does not say %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Login() != nil || p.KerberosStatus() != nil || p.WorkerConfiguration != nil {
				t.Errorf("a login without Kerberos or a keytab: %v %v", p.Login(), p.WorkerConfiguration)
			}
			if got := p.Hadoop().DefaultFS(); got != tc.defaultFS {
				t.Errorf("fs.defaultFS %q, want %q", got, tc.defaultFS)
			}
			warned := strings.Contains(logs.String(), "requires Kerberos but there is no login")
			if warned != tc.warn {
				t.Errorf("warned %v, want %v; logs:\n%s", warned, tc.warn, logs.String())
			}
		})
	}
}

func TestRegisterHDFS(t *testing.T) {
	p, err := Setup(conf.New(), Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	r := fs.NewResolver()
	defer r.Close()
	if err := p.RegisterHDFS(r); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Schemes(), "hdfs") {
		t.Fatalf("schemes %v after RegisterHDFS, want hdfs", r.Schemes())
	}
	// A resolver that has hdfs keeps it; the zero Process registers too.
	if err := (&Process{}).RegisterHDFS(r); err != nil {
		t.Fatalf("registering over an existing hdfs: %v", err)
	}
	r2 := fs.NewResolver()
	defer r2.Close()
	if err := (&Process{}).RegisterHDFS(r2); err != nil || !slices.Contains(r2.Schemes(), "hdfs") {
		t.Fatalf("the zero Process: %v, schemes %v", err, r2.Schemes())
	}
}
