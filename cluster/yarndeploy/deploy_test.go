package yarndeploy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

func TestConfigYAMLRoundTrip(t *testing.T) {
	c := conf.FromMap(map[string]string{
		"parallelism.default":               "4",
		"yarn.tags":                         "a,b",
		"pipeline.name":                     `it's: "quoted" # not a comment`,
		"execution.checkpointing.interval":  "10 s",
		"yarn.application.name":             "",
		"containerized.taskmanager.env.X_Y": "$PWD/lib",
		"restart-strategy.type":             "fixed-delay",
		"high-availability.storageDir":      "hdfs:///sluice/ha",
		"yarn.provided.lib.dirs":            "hdfs:///a;hdfs:///b",
	}, conf.Source{Name: "test"})
	b, err := configYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := conf.ParseYAML("config.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	want, got := c.ToMap(), back.ToMap()
	if len(got) != len(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if tags := conf.Get(back, conf.YarnTags); len(tags) != 2 || tags[1] != "b" {
		t.Errorf("yarn.tags read back as %v", tags)
	}
	if empty, err := configYAML(conf.New()); err != nil || !bytes.HasPrefix(empty, []byte("#")) {
		t.Errorf("empty configuration: %q, %v", empty, err)
	} else if c, err := conf.ParseYAML("empty", empty); err != nil || c.Len() != 0 {
		t.Errorf("empty configuration read back: %v, %v", c, err)
	}
}

func TestHadoopXMLRoundTrip(t *testing.T) {
	src := hadoop.NewConfiguration(nil)
	if err := src.AddResource("core-site.xml", strings.NewReader(`<configuration>
		<property><name>fs.defaultFS</name><value>hdfs://nn:8020</value></property>
		<property><name>yarn.resourcemanager.hostname</name><value>rm &amp; co</value></property>
		<property><name>x.ref</name><value>${fs.defaultFS}/x</value></property>
	</configuration>`)); err != nil {
		t.Fatal(err)
	}
	c := conf.FromMap(map[string]string{"flink.hadoop.dfs.replication": "2", "flink.yarn.resourcemanager.hostname": "rm2"}, conf.Source{Name: "test"})
	h := withOverrides(src, c, nil)
	if v, _ := src.Raw("yarn.resourcemanager.hostname"); v != "rm & co" {
		t.Errorf("withOverrides modified its input: %q", v)
	}
	b, err := hadoopXML(h)
	if err != nil {
		t.Fatal(err)
	}
	back := hadoop.NewConfiguration(nil)
	if err := back.AddResource("staged core-site.xml", bytes.NewReader(b)); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for k, want := range map[string]string{
		"fs.defaultFS": "hdfs://nn:8020", "yarn.resourcemanager.hostname": "rm2", "dfs.replication": "2",
		"x.ref": "${fs.defaultFS}/x", "yarn.resourcemanager.scheduler.address": "${yarn.resourcemanager.hostname}:8030",
	} {
		if got, _ := back.Raw(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := back.Get("x.ref", ""); got != "hdfs://nn:8020/x" {
		t.Errorf("x.ref expands to %q", got)
	}
}

func TestCheckResources(t *testing.T) {
	maxCap := yarn.Resource{MemoryMB: 4096, VCores: 4}
	tests := []struct {
		name   string
		am, tm yarn.Resource
		want   []string
	}{
		{"fits exactly", yarn.Resource{MemoryMB: 4096, VCores: 4}, yarn.Resource{MemoryMB: 4096, VCores: 4}, nil},
		{"TaskManager memory", yarn.Resource{MemoryMB: 1600, VCores: 1}, yarn.Resource{MemoryMB: 8192, VCores: 1},
			[]string{"taskmanager.memory.process.size is 8192 MB, the maximum 4096 MB"}},
		{"everything", yarn.Resource{MemoryMB: 5000, VCores: 5}, yarn.Resource{MemoryMB: 5000, VCores: 8},
			[]string{"jobmanager.memory.process.size is 5000 MB", "yarn.appmaster.vcores is 5", "taskmanager.memory.process.size is 5000 MB", "TaskManager vcores (yarn.containers.vcores, or taskmanager.numberOfTaskSlots when it is -1) are 8, the maximum 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkResources(maxCap, tt.am, tt.tm)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var re *ResourceError
			if !errors.As(err, &re) || !errors.Is(err, yarn.ErrExceedsMaximum) || len(re.Problems) != len(tt.want) {
				t.Fatalf("err = %v", err)
			}
			for i, w := range tt.want {
				if !strings.Contains(re.Problems[i], w) {
					t.Errorf("problem %d %q does not contain %q", i, re.Problems[i], w)
				}
			}
		})
	}
}

func newTestDeployer(t *testing.T, props map[string]string, defaultFS string) *Deployer {
	t.Helper()
	h := hadoop.NewConfiguration(nil)
	h.Set("fs.defaultFS", defaultFS)
	d, err := New(Options{Conf: conf.FromMap(props, conf.Source{Name: "test"}), Hadoop: h, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestStagingDir(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 12}
	tests := []struct {
		name      string
		props     map[string]string
		defaultFS string
		want      string
		wantErr   string
	}{
		{"home directory", nil, "hdfs://nn:8020", "hdfs://nn:8020/user/alice/.sluice/application_1700000000000_0012", ""},
		{"HA nameservice", nil, "hdfs://ns1", "hdfs://ns1/user/alice/.sluice/application_1700000000000_0012", ""},
		{"staging path on the default FS", map[string]string{"yarn.staging-directory": "/apps/staging"}, "hdfs://nn:8020",
			"hdfs://nn:8020/apps/staging/.sluice/application_1700000000000_0012", ""},
		{"staging URI", map[string]string{"yarn.staging-directory": "hdfs://other:9000/s"}, "hdfs://nn:8020",
			"hdfs://other:9000/s/.sluice/application_1700000000000_0012", ""},
		{"not HDFS", nil, "file:///", "", "must be on HDFS"},
		{"relative", map[string]string{"yarn.staging-directory": "staging"}, "hdfs://nn:8020", "", "not an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDeployer(t, tt.props, tt.defaultFS)
			u, err := d.StagingDir(id)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || u.String() != tt.want {
				t.Fatalf("got %v, %v; want %s", u, err, tt.want)
			}
		})
	}
}

type fakeInfo struct {
	size int64
	mod  time.Time
}

func (f fakeInfo) Name() string       { return "f" }
func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) Mode() os.FileMode  { return 0o644 }
func (f fakeInfo) ModTime() time.Time { return f.mod }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return nil }

func TestLocalResource(t *testing.T) {
	mod := time.UnixMilli(1700000000123)
	d := newTestDeployer(t, nil, "hdfs://nn:8020")
	u, err := d.StagingDir(yarn.ApplicationID{ClusterTimestamp: 1, ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := localResource(u, u.Path+"/taskmanager", fakeInfo{size: 42, mod: mod}, yarn.VisibilityApplication)
	want := yarn.LocalResource{
		URL:  yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/alice/.sluice/application_1_0001/taskmanager"},
		Size: 42, Timestamp: 1700000000123, Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication,
	}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	d2 := newTestDeployer(t, nil, "hdfs://ns1")
	u2, _ := d2.StagingDir(yarn.ApplicationID{ClusterTimestamp: 1, ID: 1})
	if r := localResource(u2, "/x", fakeInfo{}, yarn.VisibilityPublic); r.URL.Host != "ns1" || r.URL.Port != -1 {
		t.Errorf("nameservice URL %+v", r.URL)
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "appmaster")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{
		Conf:      conf.FromMap(map[string]string{"yarn.appmaster.vcores": "0"}, conf.Source{Name: "test"}),
		AppMaster: notExec, TaskManager: filepath.Join(dir, "missing"),
	})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"yarn.appmaster.vcores", "Hadoop is nil", "AppMaster: " + notExec + " is not an executable file", "TaskManager:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestBriefDiagnostics(t *testing.T) {
	for in, want := range map[string]string{
		"[Sun Nov 29 16:05:57 +0000 2026] Application is Activated, waiting for resources to be assigned for AM.  Details : AM Partition = x": "Application is Activated, waiting for resources to be assigned for AM.",
		"AM container is launched, waiting for AM container to Register with RM":                                                              "AM container is launched, waiting for AM container to Register with RM",
		"first line\nsecond": "first line",
		"":                   "",
	} {
		if got := briefDiagnostics(in); got != want {
			t.Errorf("briefDiagnostics(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewChecksTheKeytabToShip(t *testing.T) {
	h := hadoop.NewConfiguration(nil)
	h.Set("fs.defaultFS", "hdfs://nn:8020")
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string // in the error; "" for none
	}{
		{name: "missing keytab", props: map[string]string{"security.kerberos.login.keytab": "/nonexistent/a.keytab",
			"security.kerberos.login.principal": "a@R"}, want: "security.kerberos.login.keytab"},
		{name: "link name with a directory", props: map[string]string{"security.kerberos.login.keytab": "/nonexistent/a.keytab",
			"security.kerberos.login.principal": "a@R", "yarn.security.kerberos.localized-keytab-path": "x/y"}, want: "plain file name"},
		{name: "not shipped: not checked", props: map[string]string{"security.kerberos.login.keytab": "/nonexistent/a.keytab",
			"security.kerberos.login.principal": "a@R", "yarn.security.kerberos.ship-local-keytab": "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Options{Conf: conf.FromMap(tc.props, conf.Source{Name: "test"}), Hadoop: h, User: "alice"})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidOptions mentioning %q", err, tc.want)
			}
		})
	}
}
