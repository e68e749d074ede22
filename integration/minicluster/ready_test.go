package minicluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodReady = `rm_address=localhost:38085
rm_scheduler_address=localhost:46083
rm_webapp_address=localhost:37397
namenode_address=localhost:42887
nm_addresses=localhost:44379,localhost:41065
# comment
pid=12411
`

func TestParseReady(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantKey string // key whose problem the error names; "" for success
		wantErr string // substring of the error
	}{
		{name: "good", data: goodReady},
		{name: "blank lines and spaces", data: "\n  " + strings.ReplaceAll(goodReady, "=", " = ") + "\n\n"},
		{name: "missing rm", data: strings.Replace(goodReady, "rm_address=localhost:38085\n", "", 1),
			wantKey: KeyRMAddress, wantErr: "missing"},
		{name: "missing namenode", data: strings.Replace(goodReady, "namenode_address=localhost:42887\n", "", 1),
			wantKey: KeyNameNodeAddress, wantErr: "missing"},
		{name: "no equals", data: goodReady + "garbage\n", wantErr: `:8: want key=value, got "garbage"`},
		{name: "empty key", data: goodReady + "=x\n", wantErr: "want key=value"},
		{name: "duplicate", data: goodReady + "pid=1\n", wantKey: KeyPID, wantErr: "duplicate key"},
		{name: "port zero", data: strings.Replace(goodReady, "localhost:37397", "localhost:0", 1),
			wantKey: KeyWebAppAddress, wantErr: "not in 1..65535"},
		{name: "port too big", data: strings.Replace(goodReady, "localhost:37397", "localhost:70000", 1),
			wantKey: KeyWebAppAddress, wantErr: "not in 1..65535"},
		{name: "no port", data: strings.Replace(goodReady, "localhost:46083", "localhost", 1),
			wantKey: KeySchedulerAddress, wantErr: "want host:port"},
		{name: "empty host", data: strings.Replace(goodReady, "localhost:42887", ":42887", 1),
			wantKey: KeyNameNodeAddress, wantErr: "empty host"},
		{name: "bad pid", data: strings.Replace(goodReady, "pid=12411", "pid=-3", 1),
			wantKey: KeyPID, wantErr: "positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseReady("/x/READY", []byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseReady: %v", err)
				}
				c := clusterFromReady("/x", f)
				if c.ResourceManager != "localhost:38085" || c.Scheduler != "localhost:46083" ||
					c.WebApp != "localhost:37397" || c.NameNode != "localhost:42887" {
					t.Errorf("cluster = %+v", c)
				}
				if len(c.NodeManagers) != 2 || c.NodeManagers[1] != "localhost:41065" {
					t.Errorf("NodeManagers = %q", c.NodeManagers)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseReady accepted %q", tt.data)
			}
			if !errors.Is(err, ErrBadConf) {
				t.Errorf("error %v is not ErrBadConf", err)
			}
			var ce *ConfError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *ConfError", err)
			}
			if ce.Key != tt.wantKey {
				t.Errorf("error key = %q, want %q (%v)", ce.Key, tt.wantKey, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "/x/READY") {
				t.Errorf("error %q lacks %q or the path", err, tt.wantErr)
			}
		})
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func site(props ...string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for i := 0; i+1 < len(props); i += 2 {
		b.WriteString("  <property><name>" + props[i] + "</name><value>" + props[i+1] + "</value></property>\n")
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

func TestLoadSiteFiles(t *testing.T) {
	tests := []struct {
		name                         string
		files                        map[string]string
		rm, sched, web, nn, wantErrs string
	}{
		{
			name: "explicit addresses",
			files: map[string]string{
				"core-site.xml": site("fs.defaultFS", "hdfs://localhost:9000"),
				"yarn-site.xml": site("yarn.resourcemanager.address", "localhost:8050",
					"yarn.resourcemanager.scheduler.address", "localhost:8051",
					"yarn.resourcemanager.webapp.address", "localhost:8052"),
			},
			rm: "localhost:8050", sched: "localhost:8051", web: "localhost:8052", nn: "localhost:9000",
		},
		{
			name: "hostname and default ports",
			files: map[string]string{
				"core-site.xml": site("fs.defaultFS", "hdfs://nn.example"),
				"yarn-site.xml": site("yarn.resourcemanager.hostname", "rm.example"),
			},
			rm: "rm.example:8032", sched: "rm.example:8030", web: "rm.example:8088", nn: "nn.example:8020",
		},
		{
			name: "variable expansion",
			files: map[string]string{
				"core-site.xml": site("fs.defaultFS", "hdfs://localhost:8020"),
				"yarn-site.xml": site("yarn.resourcemanager.hostname", "127.0.0.1",
					"yarn.resourcemanager.address", "${yarn.resourcemanager.hostname}:18032"),
			},
			rm: "127.0.0.1:18032", sched: "127.0.0.1:8030", web: "127.0.0.1:8088", nn: "localhost:8020",
		},
		{
			name:     "no files",
			files:    map[string]string{},
			wantErrs: "neither READY nor",
		},
		{
			name:     "file scheme",
			files:    map[string]string{"core-site.xml": site("fs.defaultFS", "file:///")},
			wantErrs: "core-site.xml: fs.defaultFS: want hdfs://host[:port]",
		},
		{
			name: "HA nameservice",
			files: map[string]string{
				"core-site.xml": site("fs.defaultFS", "hdfs://mycluster"),
				"hdfs-site.xml": site("dfs.nameservices", "mycluster"),
			},
			wantErrs: "HA nameservice",
		},
		{
			name: "unset variable",
			files: map[string]string{
				"core-site.xml": site("fs.defaultFS", "hdfs://localhost:8020"),
				"yarn-site.xml": site("yarn.resourcemanager.address", "${nope}:1"),
			},
			wantErrs: "yarn-site.xml: yarn.resourcemanager.address: ",
		},
		{
			name:     "not xml",
			files:    map[string]string{"yarn-site.xml": "<configuration><property>"},
			wantErrs: "not a Hadoop configuration file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			c, err := Load(dir)
			if tt.wantErrs != "" {
				if err == nil {
					t.Fatalf("Load accepted %v: %+v", tt.files, c)
				}
				if !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), tt.wantErrs) {
					t.Fatalf("error %q: want ErrBadConf containing %q", err, tt.wantErrs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := []string{c.ResourceManager, c.Scheduler, c.WebApp, c.NameNode}
			want := []string{tt.rm, tt.sched, tt.web, tt.nn}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("addresses = %q, want %q", got, want)
					break
				}
			}
			if c.ConfDir != dir {
				t.Errorf("ConfDir = %q, want %q", c.ConfDir, dir)
			}
			if err := c.Stop(); err != nil {
				t.Errorf("Stop of an external cluster: %v", err)
			}
		})
	}
}

func TestLoadStaleReady(t *testing.T) {
	// A pid that cannot be running: beyond the kernel's pid_max (at most 4194304).
	dir := writeFiles(t, map[string]string{ReadyFile: strings.Replace(goodReady, "pid=12411", "pid=99999999", 1)})
	_, err := Load(dir)
	if !errors.Is(err, ErrBadConf) || !strings.Contains(err.Error(), "stale READY") {
		t.Fatalf("Load of a stale READY: %v, want a stale-READY ErrBadConf", err)
	}
}

func TestParseSecureReady(t *testing.T) {
	secure := goodReady + `secure=true
realm=EXAMPLE.COM
kdc_address=localhost:37637
krb5_conf=/c/kerberos/krb5.conf
client_principal=sluice@EXAMPLE.COM
client_keytab=/c/kerberos/sluice.keytab
service_keytab=/c/kerberos/service.keytab
namenode_principal=hdfs/localhost@EXAMPLE.COM
resourcemanager_principal=hdfs/localhost@EXAMPLE.COM
kafka_principal=kafka/localhost@EXAMPLE.COM
kafka_keytab=/c/kerberos/kafka.keytab
`
	f, err := ParseReady("READY", []byte(secure))
	if err != nil {
		t.Fatal(err)
	}
	k := clusterFromReady("/c", f).Kerberos
	want := Kerberos{Realm: "EXAMPLE.COM", KDC: "localhost:37637", Krb5Conf: "/c/kerberos/krb5.conf", Principal: "sluice@EXAMPLE.COM",
		Keytab: "/c/kerberos/sluice.keytab", ServiceKT: "/c/kerberos/service.keytab", NameNode: "hdfs/localhost@EXAMPLE.COM",
		RM: "hdfs/localhost@EXAMPLE.COM", Kafka: "kafka/localhost@EXAMPLE.COM", KafkaKT: "/c/kerberos/kafka.keytab"}
	if k == nil || *k != want {
		t.Fatalf("Kerberos = %+v, want %+v", k, want)
	}
	if k := clusterFromReady("/c", mustParse(t, goodReady)).Kerberos; k != nil {
		t.Errorf("a cluster without secure=true has Kerberos %+v", k)
	}
	_, err = ParseReady("READY", []byte(strings.Replace(secure, "krb5_conf=/c/kerberos/krb5.conf\n", "", 1)))
	var ce *ConfError
	if !errors.As(err, &ce) || ce.Key != KeyKrb5Conf {
		t.Fatalf("secure READY without krb5_conf: %v", err)
	}
}

func mustParse(t *testing.T, s string) map[string]string {
	t.Helper()
	f, err := ParseReady("READY", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
