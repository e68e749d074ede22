package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/graph"
	"github.com/sluice/sluice/rest"
	"github.com/sluice/sluice/rest/resttest"
)

// fakeJob is the test double of a job binary (testdata/fakejob), built once.
var fakeJob string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeJob = filepath.Join(dir, "fakejob")
	build := exec.Command("go", "build", "-o", fakeJob, "./testdata/fakejob")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building testdata/fakejob:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// sluice runs the CLI in-process.
func sluice(t *testing.T, cl Cluster, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(append([]string{"sluice"}, args...), strings.NewReader(""), &out, &errb, cl)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

const (
	jobA    = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	jobB    = "1111aaaa2222bbbb3333cccc4444dddd"
	unknown = "ffffffffffffffffffffffffffffffff"
)

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string // in stderr
		help string   // the command the hint names
	}{
		{[]string{"bogus"}, []string{`"bogus" is not a sluice command`, "The commands are: run, info, list"}, "sluice"},
		{[]string{"rnu"}, []string{`did you mean "run"?`}, "sluice"},
		{[]string{"--verbose"}, []string{"flag provided but not defined: -verbose"}, "sluice"},
		{[]string{"run"}, []string{"give the job binary: sluice run [OPTIONS] BINARY [ARGUMENTS...]"}, "sluice run"},
		{[]string{"run", "/nonexistent/myjob"}, []string{`job binary "/nonexistent/myjob" does not exist`, "go build -o"}, "sluice run"},
		{[]string{"run", dir}, []string{"is a directory", "build the program first"}, "sluice run"},
		{[]string{"run", notExec}, []string{"is not executable; chmod +x it"}, "sluice run"},
		{[]string{"run", "--paralelism", "3", fakeJob}, []string{"flag provided but not defined: -paralelism; did you mean --parallelism?"}, "sluice run"},
		{[]string{"run", "-p", "0", fakeJob}, []string{"--parallelism 0: the parallelism must be at least 1"}, "sluice run"},
		{[]string{"run", "-p", "x", fakeJob}, []string{`invalid value "x" for flag -p`}, "sluice run"},
		{[]string{"run", "--target", "mars", fakeJob}, []string{`--target "mars" is not a target; use one of local, remote, yarn-session, yarn-application`}, "sluice run"},
		{[]string{"run", "-d", fakeJob}, []string{"--detached needs a cluster", "Use --target remote"}, "sluice run"},
		{[]string{"run", "-n", fakeJob}, []string{"--allowNonRestoredState only applies when restoring: add --fromSavepoint PATH"}, "sluice run"},
		{[]string{"run", "-t", "local", "-m", "jm:8081", fakeJob}, []string{"--jobmanager names a standalone cluster, but --target is local"}, "sluice run"},
		{[]string{"run", "-m", "jm", fakeJob}, []string{`--jobmanager "jm" is not host:port`}, "sluice run"},
		{[]string{"run", "-m", "jm:http", fakeJob}, []string{`port "http" is not a port number`}, "sluice run"},
		{[]string{"run", "-D", "parallelism.default=zero", fakeJob}, []string{`-D: parallelism.default: invalid integer "zero"`, "Fix the values in config.yaml"}, "sluice run"},
		{[]string{"run", "-Dparallelism.default=0", "-Dheartbeat.timeout=soon", "-D", "novalue", fakeJob},
			[]string{"3 problems in the configuration", "parallelism.default", "heartbeat.timeout", `"novalue"`}, "sluice run"},
		{[]string{"run", "--configDir", dir, fakeJob}, []string{"config.yaml: no such file", "must name the directory holding config.yaml"}, "sluice run"},
		{[]string{"info"}, []string{"give the job binary: sluice info [OPTIONS] BINARY"}, "sluice info"},
		{[]string{"list", "extra"}, []string{`list takes no arguments, got ["extra"]`}, "sluice list"},
		{[]string{"list", "--target", "yarn-application"}, []string{`--target "yarn-application": a running cluster is remote or yarn-session`}, "sluice list"},
		{[]string{"cancel"}, []string{"give the job's ID: sluice cancel [OPTIONS] JOB_ID (list the jobs with 'sluice list')"}, "sluice cancel"},
		{[]string{"cancel", "wordcount"}, []string{`"wordcount" is not a job ID: a job ID is 32 hexadecimal characters`}, "sluice cancel"},
		{[]string{"cancel", jobA, jobB}, []string{`too many arguments ["` + jobB + `"]`}, "sluice cancel"},
		{[]string{"savepoint", jobA, "/sp", "extra"}, []string{`too many arguments ["extra"]`}, "sluice savepoint"},
		{[]string{"savepoint", "--type", "zip", jobA}, []string{`--type "zip" is not a savepoint format; use canonical`}, "sluice savepoint"},
		{[]string{"savepoint", "--dispose", "/sp/savepoint-1", jobA}, []string{"--dispose takes the savepoint path alone"}, "sluice savepoint"},
		{[]string{"stop", "--drian", jobA}, []string{"did you mean --drain?"}, "sluice stop"},
		{[]string{"checkpoint"}, []string{"give the job's ID: sluice checkpoint [OPTIONS] JOB_ID"}, "sluice checkpoint"},
		{[]string{"jobmanager", "./no-such-binary"}, []string{`the job binary "./no-such-binary"`}, "sluice jobmanager"},
		{[]string{"taskmanager", "-m", "nope"}, []string{`--jobmanager "nope" is not host:port`, "localhost:6123"}, "sluice taskmanager"},
		{[]string{"kafka"}, []string{`"kafka" needs a subcommand: transactions`}, "sluice kafka"},
		{[]string{"kafka", "transactions", "lsit"}, []string{`"lsit" is not a subcommand of "kafka transactions"; the subcommands are: list, abort`}, "sluice kafka transactions"},
		{[]string{"kafka", "transactions", "list", "--prefix", "x"}, []string{"--bootstrap is required"}, "sluice kafka transactions list"},
		{[]string{"kafka", "transactions", "list", "-b", "localhost:9092"}, []string{"--prefix is required"}, "sluice kafka transactions list"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := sluice(t, Cluster{}, tc.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\n%s", r.code, r)
			}
			for _, w := range append(tc.want, "Run '"+tc.help+" --help' for usage.") {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q\n%s", w, r)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "sluice COMMAND [OPTIONS] [ARGUMENTS...]"},
		{nil, "sluice COMMAND [OPTIONS] [ARGUMENTS...]"},
		{[]string{"run", "--help"}, "sluice run [OPTIONS] BINARY [ARGUMENTS...]"},
		{[]string{"run", "-h"}, "--fromSavepoint PATH, -s PATH"},
		{[]string{"info", "--help"}, "sluice info [OPTIONS] BINARY [ARGUMENTS...]"},
		{[]string{"list", "--help"}, "--all, -a"},
		{[]string{"savepoint", "--help"}, "sluice savepoint --dispose SAVEPOINT_PATH"},
		{[]string{"checkpoint", "--help"}, "--full"},
		{[]string{"stop", "--help"}, "--savepointPath DIRECTORY, -p DIRECTORY"},
		{[]string{"cancel", "--help"}, "sluice cancel [OPTIONS] JOB_ID"},
		{[]string{"jobmanager", "--help"}, "--webui-port PORT"},
		{[]string{"taskmanager", "--help"}, "--slots value"},
		{[]string{"kafka", "transactions", "abort", "--help"}, "--bootstrap"},
		{[]string{"help", "stop"}, "sluice stop [OPTIONS] JOB_ID"},
	} {
		r := sluice(t, Cluster{}, tc.args...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("%v: want exit 0 and %q in stdout\n%s", tc.args, tc.want, r)
		}
	}
}

func TestNormalizeArgs(t *testing.T) {
	app := newApp(nil, nil, nil, Cluster{})
	for _, tc := range []struct{ in, want string }{
		{"sluice run -Dparallelism.default=2 ./job -Dmine=x --detached", "sluice run -D parallelism.default=2 ./job -Dmine=x --detached"},
		{"sluice run -p 2 -m h:1 ./job a b", "sluice run -p 2 -m h:1 ./job a b"},
		{"sluice run -d ./job -p 3", "sluice run -d ./job -p 3"},
		{"sluice run -- ./job -p 3", "sluice run -- ./job -p 3"},
		{"sluice info -D=a=b ./job", "sluice info -D=a=b ./job"},
		{"sluice savepoint JOB /sp --detached -m h:1", "sluice savepoint --detached -m h:1 JOB /sp"},
		{"sluice stop JOB -p /sp --drain", "sluice stop -p /sp --drain JOB"},
		{"sluice stop JOB -- -p", "sluice stop JOB -- -p"},
		{"sluice kafka transactions list -Dx=y -b h:1 --prefix p", "sluice kafka transactions list -D x=y -b h:1 --prefix p"},
		{"sluice bogus -Dx=1", "sluice -D x=1 bogus"},
	} {
		if got := strings.Join(normalizeArgs(app, strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("normalizeArgs(%s)\n = %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func report(t *testing.T, r result) Report {
	t.Helper()
	var rep Report
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &rep); err != nil {
		t.Fatalf("the job's report does not parse: %v\n%s", err, r)
	}
	return rep
}

// Report mirrors testdata/fakejob's Report.
type Report struct {
	Target     string   `json:"target"`
	JobManager string   `json:"jobmanager"`
	Props      []string `json:"props"`
	Args       []string `json:"args"`
	ConfDir    string   `json:"confDir"`
}

func TestRunLocal(t *testing.T) {
	confDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(confDir, "config.yaml"), []byte("parallelism.default: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(mustWd(t), confDir)
	if err != nil {
		t.Fatal(err)
	}
	r := sluice(t, Cluster{}, "run", "--configDir", rel, "-Dpipeline.name=wc", "-D", "yarn.tags=a,b", "-p", "5",
		"-s", "/sp/savepoint-1", "-n", fakeJob, "input.txt", "-p", "7", "-Dnot.for.sluice=1", "--exit=3")
	if r.code != 3 {
		t.Fatalf("the job's exit status is not passed on\n%s", r)
	}
	if !strings.Contains(r.stderr, "job binary "+fakeJob+" exited with status 3") {
		t.Errorf("stderr does not report the status\n%s", r)
	}
	rep := report(t, r)
	want := Report{
		Target: "local",
		Props: []string{"pipeline.name=wc", "yarn.tags=a,b", "parallelism.default=5", "execution.state-recovery.path=/sp/savepoint-1",
			"execution.state-recovery.ignore-unclaimed-state=true", "execution.attached=true", "execution.target=local"},
		Args:    []string{"input.txt", "-p", "7", "-Dnot.for.sluice=1", "--exit=3"},
		ConfDir: confDir,
	}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("the job was given\n%+v\nwant\n%+v", rep, want)
	}
	// The configuration's execution.target decides without --target.
	if err := os.WriteFile(filepath.Join(confDir, "config.yaml"), []byte("execution.target: yarn-session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = sluice(t, Cluster{}, "run", "--configDir", confDir, fakeJob)
	if r.code != 1 || !strings.Contains(r.stderr, "--target yarn-session is not supported yet") {
		t.Errorf("execution.target from config.yaml\n%s", r)
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestUnknownKeyWarning(t *testing.T) {
	r := sluice(t, Cluster{}, "run", "-Dparalelism.default=2", fakeJob)
	if r.code != 0 || !strings.Contains(r.stderr, `sluice: warning: unknown key "paralelism.default" (-D); did you mean "parallelism.default"?`) {
		t.Fatalf("want a warning suggesting the known key\n%s", r)
	}
	if rep := report(t, r); !slices.Contains(rep.Props, "paralelism.default=2") {
		t.Errorf("an unknown key is still passed on: %v", rep.Props)
	}
}

// cluster is a REST endpoint over a fake cluster.
func cluster(t *testing.T, b *resttest.Backend) string { return tokenCluster(t, b, nil) }

// tokenCluster is a REST endpoint over a fake cluster that requires token
// of requests that change state (none if nil).
func tokenCluster(t *testing.T, b *resttest.Backend, token []byte) string {
	t.Helper()
	s, err := rest.New(rest.Config{BindAddress: "127.0.0.1", UploadDir: t.TempDir(), Clock: clock.NewManual(1_700_000_000_000),
		Log: slog.New(slog.DiscardHandler), Token: token}, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

func TestRunRemote(t *testing.T) {
	b := resttest.New()
	b.AutoFinish = restapi.AppSucceeded
	addr := cluster(t, b)
	r := sluice(t, Cluster{}, "run", "-m", addr, fakeJob, "remote job", "--flag")
	if r.code != 0 || !strings.Contains(r.stdout, "ended: SUCCEEDED") {
		t.Fatalf("attached remote run\n%s", r)
	}
	got := b.Received()
	if len(got) != 1 || got[0].Submission.Graph.Name != "remote job" || !reflect.DeepEqual(got[0].Submission.Args, []string{"remote job", "--flag"}) {
		t.Fatalf("received %+v", got)
	}
	self, err := os.ReadFile(fakeJob)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[0].Binary, self) {
		t.Error("the binary received is not the job binary")
	}

	// Detached: the job is left running.
	b.AutoFinish = ""
	r = sluice(t, Cluster{}, "run", "--target", "remote", "-Drest.address=127.0.0.1", "-Drest.port="+strings.Split(addr, ":")[1], "--detached", fakeJob, "detached job")
	if r.code != 0 || !strings.Contains(r.stdout, "Job has been submitted with JobID") || strings.Contains(r.stdout, "ended") {
		t.Fatalf("detached remote run\n%s", r)
	}
	got = b.Received()
	if st, _ := b.State(got[1].JobID); len(got) != 2 || st != restapi.JobRunning {
		t.Fatalf("the detached job is %s", st)
	}

	// A job that fails: the status is passed on.
	b.AutoFinish = restapi.AppFailed
	r = sluice(t, Cluster{}, "run", "-m", addr, fakeJob, "failing job")
	if r.code != 1 || !strings.Contains(r.stderr, "job failed") {
		t.Fatalf("failing remote job\n%s", r)
	}
}

// fakeYarn is a YarnCluster of our own for the CLI's wiring: sessions
// resolve to a test REST server; deployments are recorded.
type fakeYarn struct {
	addr    string
	token   []byte
	app     *YarnApplication
	started bool
	killed  string
	stopped string
}

func (f *fakeYarn) Session(_ context.Context, c *conf.Configuration, _ io.Writer) (YarnSession, error) {
	if conf.Get(c, conf.YarnApplicationID) != "application_1_0001" {
		return YarnSession{}, errors.New("no such application")
	}
	return YarnSession{Address: f.addr, Token: f.token}, nil
}

func (f *fakeYarn) RunApplication(_ context.Context, _ *conf.Configuration, out io.Writer, app YarnApplication) error {
	f.app = &app
	fmt.Fprintln(out, "Application id: application_1_0002")
	return nil
}

func (f *fakeYarn) StartSession(_ context.Context, _ *conf.Configuration, out io.Writer) error {
	f.started = true
	fmt.Fprintln(out, "Application id: application_1_0001")
	return nil
}

func (f *fakeYarn) Kill(_ context.Context, c *conf.Configuration, _ io.Writer) error {
	f.killed = conf.Get(c, conf.YarnApplicationID)
	return nil
}

func (f *fakeYarn) Stop(_ context.Context, c *conf.Configuration, _ io.Writer) error {
	f.stopped = conf.Get(c, conf.YarnApplicationID)
	return nil
}

func TestRunYarnHook(t *testing.T) {
	b := resttest.New()
	b.AutoFinish = restapi.AppSucceeded
	for _, target := range []string{"yarn-session", "yarn-application"} {
		r := sluice(t, Cluster{}, "run", "-t", target, "-Dyarn.application.id=application_1_0001", fakeJob)
		if r.code != 1 || !strings.Contains(r.stderr, "--target "+target+" is not supported yet: YARN deployment (issue #5)") {
			t.Errorf("without YARN\n%s", r)
		}
	}
	// The session requires its REST token, which the YARN side reads from
	// the application's staging directory.
	token := []byte("0123456789abcdef")
	y := &fakeYarn{addr: tokenCluster(t, b, token)}
	cl := Cluster{YarnCluster: y}
	r := sluice(t, cl, "run", "-t", "yarn-session", "-Dyarn.application.id=application_1_0001", fakeJob, "on yarn")
	if r.code == 0 || !strings.Contains(r.stderr, "security.rest.token-file") {
		t.Errorf("run on a yarn-session without its token\n%s", r)
	}
	y.token = token

	// yarn-session: the program runs here against the session's REST address.
	r = sluice(t, cl, "run", "-t", "yarn-session", fakeJob, "on yarn")
	if r.code != 2 || !strings.Contains(r.stderr, "-Dyarn.application.id=application_") {
		t.Errorf("yarn-session without an application id\n%s", r)
	}
	r = sluice(t, cl, "run", "-t", "yarn-session", "-Dyarn.application.id=application_1_0001", fakeJob, "on yarn")
	if r.code != 0 || !strings.Contains(r.stdout, "ended: SUCCEEDED") {
		t.Errorf("run on a yarn-session\n%s", r)
	}
	r = sluice(t, cl, "list", "-t", "yarn-session", "-Dyarn.application.id=application_1_0009")
	if r.code != 1 || !strings.Contains(r.stderr, "no such application") {
		t.Errorf("list on an unknown session\n%s", r)
	}

	// yarn-application: the program, its arguments and properties go to YARN.
	r = sluice(t, cl, "run", "-t", "yarn-application", "-p", "2", fakeJob, "on yarn", "-x")
	if r.code != 0 || y.app == nil {
		t.Fatalf("yarn-application\n%s", r)
	}
	if y.app.Binary != fakeJob || !slices.Equal(y.app.Args, []string{"on yarn", "-x"}) || !y.app.Attached ||
		!slices.Contains(y.app.Dynamic, "parallelism.default=2") || slices.ContainsFunc(y.app.Dynamic, func(p string) bool { return strings.HasPrefix(p, "execution.target=") }) {
		t.Errorf("deployed %+v", *y.app)
	}
	r = sluice(t, cl, "run", "-t", "yarn-application", "--detached", fakeJob)
	if r.code != 0 || y.app.Attached {
		t.Errorf("detached yarn-application %+v\n%s", *y.app, r)
	}

	// yarn-session: start and stop.
	r = sluice(t, cl, "yarn-session")
	if r.code != 0 || !y.started || !strings.Contains(r.stdout, "application_1_0001") {
		t.Errorf("yarn-session\n%s", r)
	}
	r = sluice(t, cl, "yarn-session", "--stop")
	if r.code != 2 || y.killed != "" || y.stopped != "" || !strings.Contains(r.stderr, "--stop needs the session's application id") {
		t.Errorf("yarn-session --stop without an id\n%s", r)
	}
	r = sluice(t, cl, "yarn-session", "--stop", "--kill", "-Dyarn.application.id=application_1_0001")
	if r.code != 2 || y.killed != "" || y.stopped != "" || !strings.Contains(r.stderr, "not both") {
		t.Errorf("yarn-session --stop --kill\n%s", r)
	}
	r = sluice(t, cl, "yarn-session", "--stop", "-Dyarn.application.id=application_1_0001")
	if r.code != 0 || y.stopped != "application_1_0001" || y.killed != "" {
		t.Errorf("yarn-session --stop\n%s", r)
	}
	r = sluice(t, cl, "yarn-session", "--kill", "-Dyarn.application.id=application_1_0002")
	if r.code != 0 || y.killed != "application_1_0002" {
		t.Errorf("yarn-session --kill\n%s", r)
	}
}

func TestInfo(t *testing.T) {
	r := sluice(t, Cluster{}, "info", "-p", "4", fakeJob, "planned job")
	if r.code != 0 {
		t.Fatalf("info\n%s", r)
	}
	g, err := graph.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("stdout is not the plan: %v\n%s", err, r)
	}
	if g.Name != "planned job" || len(g.Nodes) != 2 || g.Nodes[1].Parallelism != 4 {
		t.Errorf("plan %+v", g)
	}
	if !strings.Contains(r.stderr, "building the plan") {
		t.Errorf("the program's output should go to stderr\n%s", r)
	}
	r = sluice(t, Cluster{}, "info", fakeJob, "--no-plan")
	if r.code != 1 || !strings.Contains(r.stderr, "exited without writing its plan: it must be a Sluice job program") {
		t.Errorf("a binary that writes no plan\n%s", r)
	}
}

func jobsFixture() *resttest.Backend {
	b := resttest.New()
	b.AddJob(resttest.Job{Overview: restapi.JobOverview{ID: jobA, Name: "word count", State: restapi.JobRunning, StartTime: 1_700_000_000_000, EndTime: -1}})
	b.AddJob(resttest.Job{Overview: restapi.JobOverview{ID: jobB, Name: "old job", State: restapi.JobFinished, StartTime: 1_600_000_000_000, EndTime: 1_600_000_100_000}})
	b.AddJob(resttest.Job{Overview: restapi.JobOverview{ID: unknown[:31] + "0", Name: "starting", State: restapi.JobCreated, StartTime: 1_700_000_100_000, EndTime: -1}})
	return b
}

func TestList(t *testing.T) {
	addr := cluster(t, jobsFixture())
	ts := func(ms int64) string { return time.UnixMilli(ms).Format("02.01.2006 15:04:05") }
	running := "------------------ Running/Restarting Jobs -------------------\n" +
		ts(1_700_000_000_000) + " : " + jobA + " : word count (RUNNING)\n" + strings.Repeat("-", 62) + "\n"
	scheduled := "----------------------- Scheduled Jobs -----------------------\n" +
		ts(1_700_000_100_000) + " : " + unknown[:31] + "0 : starting (CREATED)\n" + strings.Repeat("-", 62) + "\n"
	ended := "---------------------- Terminated Jobs -----------------------\n" +
		ts(1_600_000_000_000) + " : " + jobB + " : old job (FINISHED)\n" + strings.Repeat("-", 62) + "\n"
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, running + scheduled},
		{[]string{"-r"}, running},
		{[]string{"--scheduled"}, scheduled},
		{[]string{"--all"}, running + scheduled + ended},
	} {
		r := sluice(t, Cluster{}, append([]string{"list", "-m", addr}, tc.flags...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("list %v\n%s\nwant stdout\n%s", tc.flags, r, tc.want)
		}
	}
	if r := sluice(t, Cluster{}, "list", "-m", cluster(t, resttest.New())); r.code != 0 || r.stdout != "No running jobs.\nNo scheduled jobs.\n" {
		t.Errorf("an empty cluster\n%s", r)
	}
}

func TestJobCommands(t *testing.T) {
	b := jobsFixture()
	addr := cluster(t, b)
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout (code 0) or stderr
	}{
		{[]string{"savepoint", "-m", addr, jobA, "/sp"}, 0, "Savepoint completed. Path: file:/sp/savepoint-0a1b2c-1\n"},
		{[]string{"savepoint", jobA, "/sp", "--detached", "-m", addr}, 0, "Savepoint triggered; trigger ID "},
		{[]string{"savepoint", "-m", addr, jobA}, 1, "savepoint of job " + jobA + " failed: rest: bad request: no target directory given"},
		{[]string{"savepoint", "-m", addr, unknown, "/sp"}, 1, "404 job " + unknown + " not found"},
		{[]string{"savepoint", "-m", addr, jobB, "/sp"}, 1, "409 job " + jobB + " is FINISHED"},
		{[]string{"checkpoint", "--full", "-m", addr, jobA}, 0, "Checkpoint 1 for job " + jobA + " completed.\n"},
		{[]string{"checkpoint", "-m", addr, jobA}, 0, "Checkpoint 2 for job " + jobA + " completed.\n"},
		{[]string{"stop", "-m", addr, "-p", "/sp", "--drain", jobA}, 0, "Draining job " + jobA + ".\nSavepoint completed. Path: file:/sp/savepoint-0a1b2c-3\n"},
		{[]string{"stop", "-m", addr, "-p", "/sp", jobA}, 1, "is FINISHED: stop-with-savepoint needs a job that is running"},
		{[]string{"cancel", "-m", addr, unknown[:31] + "0"}, 0, "Cancelled job " + unknown[:31] + "0.\n"},
		{[]string{"cancel", "-m", addr, unknown[:31] + "0"}, 1, "409 rest: conflict with the job's state: job " + unknown[:31] + "0 has already ended (CANCELED)"},
		{[]string{"cancel", "-m", "127.0.0.1:1", jobA}, 1, "is the JobManager running there?"},
		{[]string{"list", "-Drest.port=1"}, 1, "GET http://localhost:1/jobs/overview"},
	} {
		r := sluice(t, Cluster{}, tc.args...)
		out := r.stdout
		if tc.code != 0 {
			out = r.stderr
		}
		if r.code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: want exit %d and %q\n%s", tc.args, tc.code, tc.want, r)
		}
	}
	if st, _ := b.State(jobA); st != restapi.JobFinished {
		t.Errorf("after stop: %s", st)
	}
}

// TestCommandsSendTheRESTToken: against a JobManager with a REST token, a
// command that changes state without it fails naming the key, and
// succeeds with -Dsecurity.rest.token-file; reading needs none.
func TestCommandsSendTheRESTToken(t *testing.T) {
	b := jobsFixture()
	addr := tokenCluster(t, b, []byte("t0ken-of-the-cluster"))
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("t0ken-of-the-cluster\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("not-it"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"list", "-m", addr}, 0, jobA},
		{[]string{"cancel", "-m", addr, jobA}, 1, "401"},
		{[]string{"cancel", "-m", addr, "-Dsecurity.rest.token-file=" + wrong, jobA}, 1, "is not this JobManager's"},
		{[]string{"cancel", "-m", addr, "-Dsecurity.rest.token-file=" + filepath.Join(t.TempDir(), "none"), jobA}, 1, "security.rest.token-file"},
		{[]string{"cancel", "-m", addr, "-Dsecurity.rest.token-file=" + file, jobA}, 0, "Cancelled job " + jobA},
	} {
		r := sluice(t, Cluster{}, tc.args...)
		out := r.stdout
		if tc.code != 0 {
			out = r.stderr
		}
		if r.code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: want exit %d and %q\n%s", tc.args, tc.code, tc.want, r)
		}
	}
}

// TestCheckpointAndSavepointTypes checks what kind of checkpoint and which
// savepoint format the checkpoint, savepoint and stop commands ask the
// JobManager's backend for, and that an unsupported format is refused
// before anything is asked.
func TestCheckpointAndSavepointTypes(t *testing.T) {
	b := jobsFixture()
	checkpoints := make(chan rest.CheckpointRequest, 1)
	b.Checkpoint = func(_ context.Context, _ string, req rest.CheckpointRequest) (int64, error) {
		checkpoints <- req
		return 7, nil
	}
	savepoints := make(chan rest.SavepointRequest, 1)
	b.Savepoint = func(_ context.Context, _ string, req rest.SavepointRequest) (string, error) {
		savepoints <- req
		return "/sp/savepoint-0a1b2c-1", nil
	}
	b.Stop = b.Savepoint
	addr := cluster(t, b)
	for _, tc := range []struct {
		args       []string
		code       int
		checkpoint string // the checkpoint type the backend got
		format     string // the savepoint format the backend got
		stderr     string
	}{
		{[]string{"checkpoint", "--full", "-m", addr, jobA}, 0, restapi.CheckpointFull, "", ""},
		{[]string{"checkpoint", "-full", "-m", addr, jobA}, 0, restapi.CheckpointFull, "", ""},
		{[]string{"checkpoint", "-m", addr, jobA}, 0, restapi.CheckpointConfigured, "", ""},
		{[]string{"savepoint", "-m", addr, jobA, "/sp"}, 0, "", restapi.FormatCanonical, ""},
		{[]string{"savepoint", "--type", "canonical", "-m", addr, jobA, "/sp"}, 0, "", restapi.FormatCanonical, ""},
		{[]string{"stop", "--type", "CANONICAL", "-m", addr, jobA}, 0, "", restapi.FormatCanonical, ""},
		{[]string{"savepoint", "--type", "native", "-m", addr, jobA, "/sp"}, 2, "", "", "--type native is not supported: Sluice writes savepoints in the canonical format only"},
		{[]string{"stop", "--type", "NATIVE", "-m", addr, jobA}, 2, "", "", "use --type canonical or leave --type out"},
		{[]string{"savepoint", "--type", "zip", "-m", addr, jobA, "/sp"}, 2, "", "", `--type "zip" is not a savepoint format; use canonical`},
	} {
		r := sluice(t, Cluster{}, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: want exit %d and %q in stderr\n%s", tc.args, tc.code, tc.stderr, r)
			continue
		}
		var gotCheckpoint, gotFormat string
		select {
		case req := <-checkpoints:
			gotCheckpoint = req.Type
		case req := <-savepoints:
			gotFormat = req.Format
		default:
		}
		if gotCheckpoint != tc.checkpoint || gotFormat != tc.format {
			t.Errorf("%v: the backend got checkpoint type %q and savepoint format %q, want %q and %q", tc.args, gotCheckpoint, gotFormat, tc.checkpoint, tc.format)
		}
	}
}

func TestSavepointTimeout(t *testing.T) {
	b := jobsFixture()
	b.Savepoint = func(ctx context.Context, _ string, _ rest.SavepointRequest) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	r := sluice(t, Cluster{}, "savepoint", "--timeout", "100ms", "-m", cluster(t, b), jobA, "/sp")
	if r.code != 1 || !strings.Contains(r.stderr, "did not complete within --timeout; it may still complete (trigger ID ") {
		t.Fatalf("a savepoint past --timeout\n%s", r)
	}
}

func TestDispose(t *testing.T) {
	dir := t.TempDir()
	sp := filepath.Join(dir, "savepoint-0a1b2c-1")
	other := filepath.Join(dir, "important")
	for _, d := range []string{sp, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "data"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := sluice(t, Cluster{}, "savepoint", "--dispose", sp)
	if r.code != 0 || r.stdout != "Savepoint '"+sp+"' disposed.\n" {
		t.Fatalf("dispose\n%s", r)
	}
	if _, err := os.Stat(sp); !os.IsNotExist(err) {
		t.Errorf("the savepoint is still there: %v", err)
	}
	r = sluice(t, Cluster{}, "savepoint", "-d", other)
	if r.code != 1 || !strings.Contains(r.stderr, "not a savepoint") || !strings.Contains(r.stderr, "Nothing was deleted") {
		t.Errorf("disposing a directory that is no savepoint\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(other, "data")); err != nil {
		t.Errorf("a directory that is no savepoint was touched: %v", err)
	}
	r = sluice(t, Cluster{}, "savepoint", "--dispose", filepath.Join(dir, "savepoint-missing"))
	if r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("disposing a missing savepoint\n%s", r)
	}
}

func TestClusterProcesses(t *testing.T) {
	for _, cmd := range []string{"jobmanager", "taskmanager"} {
		r := sluice(t, Cluster{}, cmd)
		if r.code != 1 || !strings.Contains(r.stderr, "not built into this sluice yet") {
			t.Errorf("%s without the cluster packages\n%s", cmd, r)
		}
	}
	var got *conf.Configuration
	record := func(_ context.Context, c *conf.Configuration, log *slog.Logger) error {
		got = c
		log.Info("started")
		return nil
	}
	r := sluice(t, Cluster{JobManager: record}, "jobmanager", "--host", "jm.local", "--webui-port", "9091", "-Dheartbeat.timeout=20 s")
	if r.code != 0 || conf.Get(got, conf.JobManagerRPCAddress) != "jm.local" || conf.Get(got, conf.RESTPort) != 9091 ||
		conf.Get(got, conf.HeartbeatTimeout) != 20*time.Second || !strings.Contains(r.stderr, "process=jobmanager") {
		t.Errorf("jobmanager settings %v\n%s", got.ToMap(), r)
	}
	r = sluice(t, Cluster{TaskManager: record}, "taskmanager", "-m", "jm.local:6124", "--slots", "4", "--host", "tm1.local")
	if r.code != 0 || conf.Get(got, conf.JobManagerRPCAddress) != "jm.local" || conf.Get(got, conf.JobManagerRPCPort) != 6124 ||
		conf.Get(got, conf.TaskManagerNumberOfTaskSlots) != 4 || got.ToMap()["taskmanager.host"] != "tm1.local" {
		t.Errorf("taskmanager settings %v\n%s", got.ToMap(), r)
	}
	failing := func(context.Context, *conf.Configuration, *slog.Logger) error {
		return fmt.Errorf("binding port 6123: address in use")
	}
	if r := sluice(t, Cluster{JobManager: failing}, "jobmanager"); r.code != 1 || !strings.Contains(r.stderr, "sluice: binding port 6123: address in use") {
		t.Errorf("a failing JobManager\n%s", r)
	}
	if r := sluice(t, Cluster{JobManager: record}, "jobmanager", "-Dtaskmanager.numberOfTaskSlots=0"); r.code != 2 || !strings.Contains(r.stderr, "must be at least 1") {
		t.Errorf("an invalid configuration\n%s", r)
	}
}

func TestKafkaTransactionsListAndAbort(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	// A lingering transaction of the job's prefix: begun, written, never ended.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("myjob-0-0"), kgo.DefaultProduceTopic("out"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		r := sluice(t, Cluster{}, args...)
		if r.code != 0 {
			t.Fatalf("%v\n%s", args, r)
		}
		return r.stdout
	}
	if out := run("kafka", "transactions", "list", "--bootstrap", addr, "--prefix", "myjob"); !strings.Contains(out, "myjob-0-0") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("list does not show the open transaction:\n%s", out)
	}
	if out := run("kafka", "transactions", "abort", "-b", addr, "-p", "myjob"); !strings.Contains(out, "aborted 1 transaction") {
		t.Fatalf("abort:\n%s", out)
	}
	if out := run("kafka", "transactions", "list", "--bootstrap", addr, "--prefix", "myjob"); strings.Contains(out, "Ongoing") {
		t.Fatalf("the transaction is still open after abort:\n%s", out)
	}
}

// A program that exits 0 without starting or submitting a job (one that
// never calls Execute, or not a Sluice program at all) is an error, not a
// silent success.
func TestRunOfAProgramThatSubmitsNoJob(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"not a Sluice program", []string{"run", truePath}, 1, "job binary " + truePath + " exited without submitting a job"},
		{"a program that never calls Execute", []string{"run", fakeJob, "--no-submit"}, 1, "calls Execute on its environment"},
		{"a program that runs its job", []string{"run", fakeJob}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sluice(t, Cluster{}, tc.args...)
			if r.code != tc.code || (tc.want != "" && !strings.Contains(r.stderr, tc.want)) || (tc.want == "" && r.stderr != "") {
				t.Fatalf("want exit %d and %q in stderr\n%s", tc.code, tc.want, r)
			}
		})
	}
}

// Without a Hadoop configuration that names the ResourceManager, a YARN
// target fails at once, saying so, instead of retrying against Hadoop's
// default 0.0.0.0:8032 (yarndeploy's TestCheckResourceManager has the
// configurations that do name it).
func TestYarnTargetsWithoutHadoopConfiguration(t *testing.T) {
	emptyConf := t.TempDir()
	if err := os.WriteFile(filepath.Join(emptyConf, "yarn-site.xml"), []byte("<configuration></configuration>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unset, yarn-application", nil, []string{"run", "-t", "yarn-application", fakeJob}, "HADOOP_CONF_DIR is unset"},
		{"unset, yarn-session", nil, []string{"yarn-session"}, "HADOOP_CONF_DIR is unset"},
		{"no address in yarn-site.xml", map[string]string{"HADOOP_CONF_DIR": emptyConf}, []string{"run", "-t", "yarn-application", fakeJob}, "yarn-site.xml has no yarn.resourcemanager.address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := yarnDeployment{getenv: func(k string) string { return tc.env[k] }}
			r := sluice(t, Cluster{YarnCluster: y}, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit 1 saying %q\n%s", tc.want, r)
			}
		})
	}
}
