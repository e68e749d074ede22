package yarnam

import (
	"encoding/base64"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// containerDir lays out a working directory as the client and YARN leave
// it: config.yaml, core-site.xml and a token file.
func containerDir(t testing.TB, withAMRM bool) (dir string, env map[string]string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileConfig), []byte("taskmanager.numberOfTaskSlots: 3\ntaskmanager.memory.process.size: 1000m\nno.such.key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileHadoopConf), []byte(`<configuration><property><name>yarn.resourcemanager.scheduler.address</name><value>rm:8030</value></property></configuration>`), 0o644); err != nil {
		t.Fatal(err)
	}
	var creds hadoop.Credentials
	if withAMRM {
		creds.AddToken("amrm", &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: hadoop.KindAMRMToken, Service: "rm:8030"})
	}
	creds.AddToken("hdfs", &hadoop.Token{Identifier: []byte("h"), Kind: hadoop.KindHDFSDelegation})
	tokens := filepath.Join(dir, "container_tokens")
	if err := creds.WriteTokenFile(tokens, hadoop.FormatWritable); err != nil {
		t.Fatal(err)
	}
	files, err := EncodeTaskManagerFiles(map[string]yarn.LocalResource{FileTaskManager: {
		URL: yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/user/alice/.sluice/application_1700000000000_0042/taskmanager"}, Size: 5, Timestamp: 9,
		Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication,
	}})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := JobProgram{Args: []string{"-out", "dir with space"}, Dynamic: []string{"parallelism.default=2"}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		EnvJobProgram:       prog,
		"CONTAINER_ID":      "container_e03_1700000000000_0042_02_000001",
		"NM_HOST":           "node7",
		"LOG_DIRS":          "/logs/a,/logs/b",
		hadoop.EnvTokenFile: tokens,
		EnvHadoopUser:       "alice",
		EnvStagingDir:       "hdfs://nn:8020/user/alice/.sluice/application_1700000000000_0042",
		EnvTaskManagerFiles: files,
		EnvJob:              FileJob,
		conf.EnvConfDir:     dir,
		EnvHadoopConfDir:    dir,
	}
}

func TestReadEnvironment(t *testing.T) {
	_, vars := containerDir(t, true)
	env, err := ReadEnvironment(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 42}
	if env.Container.Attempt != (yarn.ApplicationAttemptID{Application: app, Attempt: 2}) || env.Container.Epoch() != 3 {
		t.Errorf("container %v", env.Container)
	}
	if env.Host != "node7" || env.User != "alice" || env.LogDir != "/logs/a" || env.Job != "./job" {
		t.Errorf("env %+v", env)
	}
	if !slices.Equal(env.Program.Args, []string{"-out", "dir with space"}) || !slices.Equal(env.Program.Dynamic, []string{"parallelism.default=2"}) {
		t.Errorf("job program %+v", env.Program)
	}
	if env.AMRMToken == nil || string(env.AMRMToken.Identifier) != "id" || env.Credentials.NumTokens() != 2 {
		t.Errorf("tokens %v %v", env.AMRMToken, env.Credentials.TokenAliases())
	}
	if env.StagingDir.Host != "nn:8020" || env.StagingDir.Path != "/user/alice/.sluice/application_1700000000000_0042" {
		t.Errorf("staging %v", env.StagingDir)
	}
	if r := env.TaskManagerFiles[FileTaskManager]; r.Size != 5 || r.Timestamp != 9 || r.URL.File == "" {
		t.Errorf("TaskManager files %+v", env.TaskManagerFiles)
	}
	if got := TaskManagerResource(env.Conf); got != (yarn.Resource{MemoryMB: 1000, VCores: 3}) {
		t.Errorf("TaskManager resource %v, want one vcore per slot", got)
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0].String(), "no.such.key") {
		t.Errorf("warnings %v", env.Warnings)
	}
	if rms, err := env.Hadoop.SchedulerAddresses(); err != nil || len(rms) != 1 || rms[0].Address != "rm:8030" {
		t.Errorf("scheduler addresses %v, %v", rms, err)
	}
}

func TestReadEnvironmentReportsEveryProblem(t *testing.T) {
	_, vars := containerDir(t, false)
	delete(vars, "NM_HOST")
	vars["CONTAINER_ID"] = "container_bad"
	vars[EnvStagingDir] = "relative/dir"
	vars[EnvTaskManagerFiles] = "{not json"
	vars[EnvJobProgram] = "!"
	_, err := ReadEnvironment(func(k string) string { return vars[k] })
	if !errors.Is(err, ErrEnvironment) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"CONTAINER_ID", "NM_HOST is not set", "holds no YARN_AM_RM_TOKEN", EnvStagingDir + `="relative/dir"`, EnvTaskManagerFiles, EnvJobProgram} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

func TestResources(t *testing.T) {
	tests := []struct {
		name   string
		props  map[string]string
		am, tm yarn.Resource
	}{
		{"defaults", nil, yarn.Resource{MemoryMB: 1600, VCores: 1}, yarn.Resource{MemoryMB: 1728, VCores: 1}},
		{"explicit", map[string]string{"jobmanager.memory.process.size": "2g", "yarn.appmaster.vcores": "2",
			"taskmanager.memory.process.size": "4096 mb", "yarn.containers.vcores": "3", "taskmanager.numberOfTaskSlots": "8"},
			yarn.Resource{MemoryMB: 2048, VCores: 2}, yarn.Resource{MemoryMB: 4096, VCores: 3}},
		{"vcores per slot, memory rounded up", map[string]string{"taskmanager.numberOfTaskSlots": "4", "taskmanager.memory.process.size": "65537k"},
			yarn.Resource{MemoryMB: 1600, VCores: 1}, yarn.Resource{MemoryMB: 65, VCores: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := conf.FromMap(tt.props, conf.Source{Name: "test"})
			if got := AppMasterResource(c); got != tt.am {
				t.Errorf("AM %v, want %v", got, tt.am)
			}
			if got := TaskManagerResource(c); got != tt.tm {
				t.Errorf("TM %v, want %v", got, tt.tm)
			}
		})
	}
}

func TestContainerEnvironment(t *testing.T) {
	c := conf.FromMap(map[string]string{
		"containerized.taskmanager.env.JAVA_HOME": "/jdk", "containerized.master.env.AM_ONLY": "1",
	}, conf.Source{Name: "test"})
	got := ContainerEnvironment(c, "alice", PrefixTaskManagerEnv)
	want := map[string]string{"SLUICE_CONF_DIR": "$PWD", "HADOOP_CONF_DIR": "$PWD", "HADOOP_USER_NAME": "alice", "JAVA_HOME": "/jdk"}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestRemoveStagingDirGuard(t *testing.T) {
	app := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 42}
	env := &Environment{
		Container:  yarn.ContainerID{Attempt: yarn.ApplicationAttemptID{Application: app, Attempt: 1}, ID: 1},
		StagingDir: &url.URL{Scheme: "hdfs", Host: "nn:8020", Path: "/user/alice"},
	}
	if err := RemoveStagingDir(env); !errors.Is(err, ErrNotStagingDir) {
		t.Fatalf("removing /user/alice: %v, want ErrNotStagingDir", err)
	}
}

func TestTaskManagerNodeLabel(t *testing.T) {
	for _, tt := range []struct {
		props map[string]string
		want  string
	}{
		{nil, ""},
		{map[string]string{"yarn.application.node-label": "gpu"}, "gpu"},
		{map[string]string{"yarn.application.node-label": "gpu", "yarn.taskmanager.node-label": "big"}, "big"},
	} {
		if got := TaskManagerNodeLabel(conf.FromMap(tt.props, conf.Source{Name: "test"})); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.props, got, tt.want)
		}
	}
}

func TestJobManagerConfHADefaults(t *testing.T) {
	staging, _ := url.Parse("hdfs://nn:8020/user/alice/.sluice/application_1700000000000_0042")
	id := yarn.ContainerID{Attempt: yarn.ApplicationAttemptID{Application: yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 42}, Attempt: 1}, ID: 1}
	tests := []struct {
		name                  string
		props                 map[string]string
		wantType, wantDir, id string
	}{
		{"defaults: per-application HA in the staging directory", nil,
			conf.HighAvailabilityFileSystem, staging.String() + "/ha", "application_1700000000000_0042"},
		{"NONE turns HA off", map[string]string{"high-availability.type": "NONE"},
			conf.HighAvailabilityNone, staging.String() + "/ha", "application_1700000000000_0042"},
		{"the user's storageDir and cluster-id win", map[string]string{"high-availability.storageDir": "hdfs:///ha", "high-availability.cluster-id": "mine"},
			conf.HighAvailabilityFileSystem, "hdfs:///ha", "mine"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &Environment{Container: id, StagingDir: staging, Conf: conf.FromMap(tc.props, conf.Source{Name: "test"})}
			c := JobManagerConf(env)
			if got := conf.Get(c, conf.HighAvailabilityType); got != tc.wantType {
				t.Errorf("type %q, want %q", got, tc.wantType)
			}
			if got := conf.Get(c, conf.HighAvailabilityStorageDir); got != tc.wantDir {
				t.Errorf("storageDir %q, want %q", got, tc.wantDir)
			}
			if got := conf.Get(c, conf.HighAvailabilityClusterID); got != tc.id {
				t.Errorf("cluster-id %q, want %q", got, tc.id)
			}
			if _, err := c.Validate(); err != nil {
				t.Errorf("invalid: %v", err)
			}
		})
	}
}

// FuzzReadEnvironmentJSON fuzzes the two JSON values the client passes in
// the ApplicationMaster's environment, base64-encoded as the client does or
// as they come: every problem is an ErrEnvironment, and what decodes
// survives the client's encoding unchanged.
func FuzzReadEnvironmentJSON(f *testing.F) {
	_, vars := containerDir(f, true)
	files, _ := EncodeTaskManagerFiles(map[string]yarn.LocalResource{
		FileTaskManager: {URL: yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/taskmanager"}, Size: 5, Timestamp: 9, Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication},
		"conf":          {URL: yarn.URL{Scheme: "file", File: "/tmp/c.zip", UserInfo: "u"}, Type: yarn.ResourceArchive, Pattern: "*.yaml"},
	})
	prog, _ := JobProgram{Args: []string{"-out", "dir with space", ""}, Dynamic: []string{"parallelism.default=2"}}.Encode()
	for _, s := range [][2]string{
		{files, prog},
		{files, ""},
		{base64.StdEncoding.EncodeToString([]byte(`{}`)), base64.StdEncoding.EncodeToString([]byte(`{"args":null}`))},
		{base64.StdEncoding.EncodeToString([]byte(`null`)), base64.StdEncoding.EncodeToString([]byte(`{"dynamic":["a=b","a=b"],"unknown":1}`))},
		{base64.StdEncoding.EncodeToString([]byte(`{"x":{"URL":{"Port":99999999999}}}`)), base64.StdEncoding.EncodeToString([]byte(`[]`))},
		{"{not base64", "!"},
	} {
		for _, raw := range []bool{false, true} {
			a, b := s[0], s[1]
			if raw {
				ab, _ := base64.StdEncoding.DecodeString(a)
				bb, _ := base64.StdEncoding.DecodeString(b)
				a, b = string(ab), string(bb)
			}
			f.Add(raw, []byte(a), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, raw bool, tmFiles, program []byte) {
		v := maps.Clone(vars)
		v[EnvTaskManagerFiles], v[EnvJobProgram] = string(tmFiles), string(program)
		if raw {
			v[EnvTaskManagerFiles] = base64.StdEncoding.EncodeToString(tmFiles)
			v[EnvJobProgram] = base64.StdEncoding.EncodeToString(program)
		}
		env, err := ReadEnvironment(func(k string) string { return v[k] })
		if err != nil {
			if !errors.Is(err, ErrEnvironment) {
				t.Fatalf("error does not wrap ErrEnvironment: %v", err)
			}
			if !strings.Contains(err.Error(), EnvTaskManagerFiles) && !strings.Contains(err.Error(), EnvJobProgram) {
				t.Fatalf("error names neither fuzzed variable: %v", err)
			}
			return
		}
		if v[EnvTaskManagerFiles] == "" {
			t.Fatal("accepted an environment without TaskManager files")
		}
		enc, err := EncodeTaskManagerFiles(env.TaskManagerFiles)
		if err != nil {
			t.Fatal(err)
		}
		v[EnvTaskManagerFiles] = enc
		if v[EnvJobProgram] != "" {
			if v[EnvJobProgram], err = env.Program.Encode(); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ReadEnvironment(func(k string) string { return v[k] })
		if err != nil {
			t.Fatalf("re-encoded values refused: %v", err)
		}
		if !reflect.DeepEqual(again.TaskManagerFiles, env.TaskManagerFiles) || !reflect.DeepEqual(again.Program, env.Program) {
			t.Fatalf("round trip changed %+v %+v into %+v %+v", env.TaskManagerFiles, env.Program, again.TaskManagerFiles, again.Program)
		}
	})
}
