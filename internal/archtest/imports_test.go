package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sluice/sluice"

// rule forbids packages matching from (a path prefix below the module, or
// exactly that package when it ends in "$") to depend, directly or not, on
// any of the listed packages. Prefixes below
// the module are relative ("stream"); others are absolute import paths.
//
// via, if set, names the one package through which the forbidden packages
// may be reached: a dependency counts only if some import path leads to it
// without passing through via.
type rule struct {
	from    string
	forbid  []string
	because string
	via     string
}

var rules = []rule{
	{"conf", []string{"runtime", "stream", "yarn", "hdfs", "kafka", "scheduler", "cmd", "hadoop"}, "conf is a leaf", ""},
	{"runtime", []string{"stream", "yarn", "hdfs", "kafka", "cmd", "hadoop", "integration"}, "the engine never imports the user API, deployment layers or connectors", ""},
	{"runtime/clock", []string{"internal/runtime/graph", "internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer"}, "the clock is a leaf of the engine", ""},
	{"internal/runtime/keygroup", []string{"internal/runtime/graph", "internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer"}, "key groups are a leaf of the engine", ""},
	{"internal/runtime/watermark", []string{"internal/runtime/graph", "internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer", "runtime/clock"}, "the watermark valve is a pure state machine", ""},
	{"internal/runtime/task", []string{"google.golang.org/grpc", "internal/runtime/netexchange"}, "tasks see only the exchange contract, whatever the transport", ""},
	{"internal/runtime/exchange", []string{"google.golang.org/grpc", "internal/runtime/netexchange", "net"}, "the exchange contract knows no transport", ""},
	{"internal/runtime/graph", []string{"internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer"}, "the job graph is plain data", ""},
	{"scheduler", []string{"google.golang.org/grpc", "net/http", "net", "os", "yarn", "internal/runtime/jobmaster", "cmd", "cluster"}, "scheduling decisions import no transport and do no I/O", ""},
	{"cluster/resourcemanager", []string{"stream", "yarn", "kafka", "hdfs", "hadoop", "cmd", "internal/runtime/jobmaster", "cluster/taskmanager"}, "the ResourceManager reaches platforms only through its Driver", ""},
	{"cluster/taskmanager", []string{"stream", "yarn", "kafka", "hdfs", "hadoop", "cmd", "internal/runtime/jobmaster", "cluster/resourcemanager"}, "the TaskManager runs job binaries; it links no user code, connectors or platforms", ""},
	{"cluster/jobmanager", []string{"stream", "yarn", "kafka", "cmd", "cluster/taskmanager", "cluster/worker"}, "the JobManager links no user code: it runs job binaries through TaskManagers", ""},
	{"cluster/deployment", []string{"runtime", "stream", "cluster/clusterpb", "cluster/taskmanager", "cluster/worker", "conf", "google.golang.org/grpc"}, "the worker deployment file is plain data both ends share", ""},
	{"cluster/worker", []string{"cluster/jobmanager", "cluster/resourcemanager", "cluster/taskmanager", "yarn", "kafka", "cmd", "stream"}, "a worker speaks only to its JobMaster and its peers", ""},
	{"stream", []string{"yarn", "kafka", "cmd", "integration"}, "the user API does not depend on deployments or connectors", ""},
	{"stream", []string{"hdfs", "hadoop"}, "the user API links HDFS only as the workers' filesystem (cluster/worker)", "cluster/worker"},
	{"kafka", []string{"yarn", "cmd"}, "connectors do not depend on deployments", ""},
	{"kafka", []string{"hadoop"}, "connectors do not depend on deployments", "cluster/worker"},
	{"yarn", []string{"stream", "runtime", "kafka", "cmd"}, "the YARN client is a protocol library", ""},
	{"internal/runtime/checkpoint$", []string{"internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer", "runtime/clock", "net", "fs", "internal/runtime/checkpoint/storage"}, "the coordinator and aligner are pure state machines", ""},
	{"internal/runtime/restart", []string{"internal/runtime/task", "internal/runtime/exchange", "internal/runtime/jobmaster", "internal/runtime/state", "internal/runtime/timer", "runtime/clock", "net"}, "restart strategies are pure decisions", ""},
	{"hdfs", []string{"runtime", "stream", "kafka", "cmd", "yarn"}, "the HDFS filesystem adapts colinmarc/hdfs to fs", ""},
	{"fs", []string{"runtime", "stream", "yarn", "hdfs", "kafka", "cmd", "hadoop", "conf"}, "the filesystem interface is a leaf", ""},
	{"hadoop", []string{"stream", "runtime", "kafka", "cmd", "yarn"}, "hadoop configuration and tokens are a leaf", ""},
	{"cluster/yarndriver", []string{"stream", "internal/runtime/jobmaster", "internal/runtime/task", "internal/runtime/state", "internal/runtime/exchange", "internal/runtime/netexchange", "internal/runtime/checkpoint", "kafka", "cmd", "cluster/yarnam", "cluster/yarndeploy"}, "the YARN resource driver only carries out scheduler decisions through yarn", ""},
	{"cluster/yarnam", []string{"stream", "internal/runtime/jobmaster", "internal/runtime/task", "internal/runtime/state", "internal/runtime/exchange", "internal/runtime/netexchange", "internal/runtime/checkpoint", "kafka", "cmd", "cluster/yarndeploy"}, "the ApplicationMaster's life is independent of the JobManager it hosts (injected by cmd/appmaster)", ""},
	{"cluster/yarndeploy", []string{"stream", "internal/runtime/jobmaster", "internal/runtime/task", "internal/runtime/state", "internal/runtime/exchange", "internal/runtime/netexchange", "internal/runtime/checkpoint", "kafka", "cmd"}, "the YARN client deploys binaries; it does not run jobs", ""},
	{"cluster/hadoopenv", []string{"stream", "runtime", "kafka", "cmd", "cluster/jobmanager", "cluster/taskmanager", "cluster/worker", "cluster/resourcemanager"}, "a process's Hadoop set-up (configuration, login, hdfs://) knows no engine and no process", ""},
	{"security", []string{"stream", "runtime", "scheduler", "yarn", "hdfs", "kafka", "cmd", "hadoop", "integration"}, "the Kerberos login is a leaf that Hadoop IPC, HDFS and Kafka share", ""},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

func abs(p string) string {
	if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") || p == "net" || p == "net/http" || p == "os" {
		return p
	}
	return module + "/" + p
}

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// reachable lists the packages p depends on through import paths that do
// not pass through avoid.
func reachable(p pkg, byPath map[string]pkg, avoid string) []string {
	seen := map[string]bool{}
	var out []string
	queue := slices.Clone(p.Imports)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if seen[d] || under(d, abs(avoid)) {
			continue
		}
		seen[d] = true
		out = append(out, d)
		if q, ok := byPath[d]; ok {
			queue = append(queue, q.Imports...)
		}
	}
	return out
}

// violations lists every forbidden dependency among pkgs.
func violations(pkgs []pkg) (msgs []string, checked int) {
	byPath := make(map[string]pkg, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, r := range rules {
		from, exact := strings.CutSuffix(r.from, "$")
		for _, p := range pkgs {
			if exact && p.ImportPath != abs(from) || !exact && !under(p.ImportPath, abs(from)) {
				continue
			}
			checked++
			deps := p.Deps
			if r.via != "" {
				deps = reachable(p, byPath, r.via)
			}
			for _, d := range deps {
				for _, f := range r.forbid {
					if under(d, abs(f)) {
						msgs = append(msgs, p.ImportPath+" imports "+d+": forbidden ("+r.because+"); see ARCHITECTURE.md")
					}
				}
			}
		}
	}
	return msgs, checked
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages; the test is not looking at the module", len(pkgs))
	}
	msgs, checked := violations(pkgs)
	if checked == 0 {
		t.Fatal("no package matched any rule")
	}
	for _, m := range msgs {
		t.Error(m)
	}
}

// TestRulesCatchViolations proves the checker flags a forbidden edge.
func TestRulesCatchViolations(t *testing.T) {
	fake := []pkg{{ImportPath: module + "/runtime/task", Deps: []string{module + "/stream"}}}
	if msgs, _ := violations(fake); len(msgs) != 1 {
		t.Fatalf("a runtime → stream import gave %d violations, want 1: %v", len(msgs), msgs)
	}
}

// TestViaRule: stream may reach hdfs through cluster/worker only.
func TestViaRule(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	worker := pkg{ImportPath: m("cluster/worker"), Imports: []string{m("hdfs")}, Deps: []string{m("hdfs")}}
	hdfsPkg := pkg{ImportPath: m("hdfs")}
	for _, tc := range []struct {
		name    string
		imports []string
		want    int
	}{
		{"through cluster/worker", []string{m("cluster/worker")}, 0},
		{"directly", []string{m("cluster/worker"), m("hdfs")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pkg{ImportPath: m("stream"), Imports: tc.imports, Deps: []string{m("cluster/worker"), m("hdfs")}}
			msgs, _ := violations([]pkg{s, worker, hdfsPkg})
			if len(msgs) != tc.want {
				t.Fatalf("got %d violations, want %d: %v", len(msgs), tc.want, msgs)
			}
		})
	}
}
