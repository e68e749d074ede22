package yarndeploy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// executable writes a stand-in binary.
func executable(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// newDeployer is a Deployer for hdfs://nn:8020 as alice, with opts' other
// fields as given.
func newDeployer(t *testing.T, props map[string]string, opts Options) *Deployer {
	t.Helper()
	h := hadoop.NewConfiguration(nil)
	h.Set("fs.defaultFS", "hdfs://nn:8020")
	opts.Conf = conf.FromMap(props, conf.Source{Name: "test"})
	opts.Hadoop, opts.User = h, "alice"
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func priority(p yarn.Priority) *yarn.Priority { return &p }

// showPriority renders a submission's priority: "unset" when none is sent.
func showPriority(p *yarn.Priority) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

func TestSubmission(t *testing.T) {
	id := yarn.ApplicationID{ClusterTimestamp: 1700000000000, ID: 7}
	job := executable(t, "wordcount")
	tests := []struct {
		name  string
		props map[string]string
		job   string // Options.Job
		// Expected submission fields; the rest are checked for every case.
		wantName, wantQueue, wantType string
		wantTags                      []string
		wantAttempts                  int32
		wantPriority                  *yarn.Priority // nil: none sent, YARN decides
		wantLabel                     string
		wantValidity                  time.Duration
		wantAM                        yarn.Resource
	}{
		{
			name:     "session defaults",
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "application defaults", job: job,
			wantName: "Sluice application wordcount", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "HA turned off: one attempt", props: map[string]string{"high-availability.type": "NONE"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 1, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "HA set explicitly: two attempts", props: map[string]string{"high-availability.type": "FILESYSTEM", "high-availability.storageDir": "hdfs:///ha"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "attempts set, HA off", props: map[string]string{"high-availability.type": "NONE", "yarn.application-attempts": "4"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 4, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "pipeline.name names it", job: job, props: map[string]string{"pipeline.name": "Word Count"},
			wantName: "Word Count", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "every yarn.* setting", job: job,
			props: map[string]string{
				"yarn.application.name":                               "nightly",
				"pipeline.name":                                       "not this",
				"yarn.application.queue":                              "root.etl",
				"yarn.application.type":                               "Apache Flink",
				"yarn.tags":                                           "team-a,nightly",
				"yarn.application-attempts":                           "3",
				"yarn.application.priority":                           "5",
				"yarn.application.node-label":                         "gpu",
				"yarn.application-attempt-failures-validity-interval": "60000",
				"jobmanager.memory.process.size":                      "2g",
				"yarn.appmaster.vcores":                               "2",
			},
			wantName: "nightly", wantQueue: "root.etl", wantType: "Apache Flink", wantTags: []string{"team-a", "nightly"},
			wantAttempts: 3, wantPriority: priority(5), wantLabel: "gpu", wantValidity: time.Minute, wantAM: yarn.Resource{MemoryMB: 2048, VCores: 2},
		},
		{
			name: "every failure counts", props: map[string]string{"yarn.application-attempt-failures-validity-interval": "-1"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 0, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			name: "priority 0 is sent", props: map[string]string{"yarn.application.priority": "0", "yarn.application-attempt-failures-validity-interval": "0"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 2, wantPriority: priority(0), wantValidity: 0, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
		{
			// As Flink: -1 (the default) leaves the priority to YARN, so
			// that the queue's default application priority applies.
			name: "priority -1 sends none", props: map[string]string{"yarn.application.priority": "-1"},
			wantName: "Sluice session cluster", wantType: "Sluice",
			wantAttempts: 2, wantValidity: 10 * time.Second, wantAM: yarn.Resource{MemoryMB: 1600, VCores: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := maps.Clone(tt.props)
			if props == nil {
				props = map[string]string{}
			}
			props["containerized.master.env.TZ"] = "UTC"
			d := newDeployer(t, props, Options{Job: tt.job, JobArgs: []string{"--out", "a b"}, JobDynamic: []string{"parallelism.default=3"}})
			dir, err := d.StagingDir(id)
			if err != nil {
				t.Fatal(err)
			}
			res := func(name string) yarn.LocalResource {
				return yarn.LocalResource{URL: yarn.URL{Scheme: "hdfs", Host: "nn", Port: 8020, File: dir.Path + "/" + name}, Size: 1, Type: yarn.ResourceFile, Visibility: yarn.VisibilityApplication}
			}
			st := &staging{dir: dir, files: map[string]yarn.LocalResource{}}
			for _, n := range []string{yarnam.FileAppMaster, yarnam.FileTaskManager, yarnam.FileConfig, yarnam.FileHadoopConf} {
				st.files[n] = res(n)
			}
			if tt.job != "" {
				st.files[yarnam.FileJob] = res(yarnam.FileJob)
			}
			// As Deploy sizes the ApplicationMaster.
			amRes := yarnam.AppMasterResource(d.opts.Conf)

			sub, err := d.submission(context.Background(), id, st, amRes)
			if err != nil {
				t.Fatal(err)
			}
			if sub.ID != id || sub.Name != tt.wantName || sub.Queue != tt.wantQueue || sub.Type != tt.wantType || !slices.Equal(sub.Tags, tt.wantTags) {
				t.Errorf("id %v name %q queue %q type %q tags %q; want %v %q %q %q %q", sub.ID, sub.Name, sub.Queue, sub.Type, sub.Tags,
					id, tt.wantName, tt.wantQueue, tt.wantType, tt.wantTags)
			}
			if sub.MaxAppAttempts != tt.wantAttempts {
				t.Errorf("MaxAppAttempts = %d, want %d", sub.MaxAppAttempts, tt.wantAttempts)
			}
			if showPriority(sub.Priority) != showPriority(tt.wantPriority) || sub.NodeLabelExpression != tt.wantLabel || sub.AttemptFailuresValidityInterval != tt.wantValidity {
				t.Errorf("priority %s label %q validity %v; want %s %q %v", showPriority(sub.Priority), sub.NodeLabelExpression, sub.AttemptFailuresValidityInterval,
					showPriority(tt.wantPriority), tt.wantLabel, tt.wantValidity)
			}
			if sub.AMResource != tt.wantAM {
				t.Errorf("AMResource = %v, want %v", sub.AMResource, tt.wantAM)
			}
			if sub.UnmanagedAM || sub.KeepContainersAcrossAttempts {
				t.Errorf("unmanaged %v, keep containers %v", sub.UnmanagedAM, sub.KeepContainersAcrossAttempts)
			}

			// The ApplicationMaster's container.
			amc := sub.AMContainer
			if want := st.appMasterFiles(); !reflect.DeepEqual(amc.LocalResources, want) {
				t.Errorf("AM local resources %v, want %v", slices.Sorted(maps.Keys(amc.LocalResources)), slices.Sorted(maps.Keys(want)))
			}
			if _, ok := amc.LocalResources[yarnam.FileTaskManager]; ok {
				t.Error("the TaskManager binary is localized in the ApplicationMaster's container")
			}
			if len(amc.Commands) != 1 || !strings.Contains(amc.Commands[0], "./"+yarnam.FileAppMaster) || !strings.Contains(amc.Commands[0], "<LOG_DIR>/jobmanager.err") {
				t.Errorf("commands %q", amc.Commands)
			}
			if amc.Tokens != nil {
				t.Errorf("tokens %d bytes without credentials", len(amc.Tokens))
			}
			env := amc.Environment
			for k, want := range map[string]string{
				yarnam.EnvStagingDir:    dir.String(),
				yarnam.EnvHadoopUser:    "alice",
				yarnam.EnvHadoopConfDir: yarnam.WorkingDir,
				conf.EnvConfDir:         yarnam.WorkingDir,
				"TZ":                    "UTC",
			} {
				if env[k] != want {
					t.Errorf("env %s = %q, want %q", k, env[k], want)
				}
			}
			b, err := base64.StdEncoding.DecodeString(env[yarnam.EnvTaskManagerFiles])
			if err != nil {
				t.Fatal(err)
			}
			var tmFiles map[string]yarn.LocalResource
			if err := json.Unmarshal(b, &tmFiles); err != nil || !reflect.DeepEqual(tmFiles, st.taskManagerFiles()) {
				t.Errorf("TaskManager files %v (%v), want %v", tmFiles, err, st.taskManagerFiles())
			}
			if tt.job == "" {
				if env[yarnam.EnvJob] != "" || env[yarnam.EnvJobProgram] != "" {
					t.Errorf("a session cluster with a job: %q %q", env[yarnam.EnvJob], env[yarnam.EnvJobProgram])
				}
				return
			}
			if env[yarnam.EnvJob] != yarnam.FileJob {
				t.Errorf("env %s = %q", yarnam.EnvJob, env[yarnam.EnvJob])
			}
			b, err = base64.StdEncoding.DecodeString(env[yarnam.EnvJobProgram])
			if err != nil {
				t.Fatal(err)
			}
			var prog yarnam.JobProgram
			if err := json.Unmarshal(b, &prog); err != nil || !slices.Equal(prog.Args, []string{"--out", "a b"}) || !slices.Equal(prog.Dynamic, []string{"parallelism.default=3"}) {
				t.Errorf("job program %+v, %v", prog, err)
			}
		})
	}
}

func TestSubmissionCarriesCredentials(t *testing.T) {
	creds := &hadoop.Credentials{}
	creds.AddToken("hdfs", &hadoop.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: hadoop.KindHDFSDelegation, Service: "nn:8020"})
	d := newDeployer(t, nil, Options{Credentials: creds})
	id := yarn.ApplicationID{ClusterTimestamp: 1, ID: 1}
	dir, err := d.StagingDir(id)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := d.submission(context.Background(), id, &staging{dir: dir, files: map[string]yarn.LocalResource{}}, yarn.Resource{MemoryMB: 1, VCores: 1})
	if err != nil {
		t.Fatal(err)
	}
	back, err := hadoop.ParseCredentials(sub.AMContainer.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := back.TokenByKind(hadoop.KindHDFSDelegation); !ok || string(tok.Identifier) != "id" {
		t.Errorf("tokens handed to the ApplicationMaster: %v", back.TokenAliases())
	}
}
