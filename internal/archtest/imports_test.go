package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluice/sluice"

// rule forbids packages matching from (a path prefix below the module, or
// exactly that package when it ends in "$") to depend, directly or not, on
// any of the listed packages. Prefixes below
// the module are relative ("stream"); others are absolute import paths.
type rule struct {
	from    string
	forbid  []string
	because string
}

var rules = []rule{
	{"conf", []string{"runtime", "stream", "yarn", "hdfs", "kafka", "scheduler", "cmd", "hadoop"}, "conf is a leaf"},
	{"runtime", []string{"stream", "yarn", "hdfs", "kafka", "cmd", "hadoop", "integration"}, "the engine never imports the user API, deployment layers or connectors"},
	{"runtime/clock", []string{"runtime/graph", "runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer"}, "the clock is a leaf of the engine"},
	{"runtime/keygroup", []string{"runtime/graph", "runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer"}, "key groups are a leaf of the engine"},
	{"runtime/watermark", []string{"runtime/graph", "runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer", "runtime/clock"}, "the watermark valve is a pure state machine"},
	{"runtime/graph", []string{"runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer"}, "the job graph is plain data"},
	{"scheduler", []string{"google.golang.org/grpc", "net/http", "net", "yarn", "runtime/local", "cmd"}, "scheduling decisions import no transport"},
	{"stream", []string{"yarn", "hdfs", "kafka", "cmd", "hadoop", "integration"}, "the user API does not depend on deployments or connectors"},
	{"kafka", []string{"yarn", "cmd", "hadoop"}, "connectors do not depend on deployments"},
	{"yarn", []string{"stream", "runtime", "kafka", "cmd"}, "the YARN client is a protocol library"},
	{"runtime/checkpoint$", []string{"runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer", "runtime/clock", "net", "fs", "runtime/checkpoint/storage"}, "the coordinator and aligner are pure state machines"},
	{"runtime/restart", []string{"runtime/task", "runtime/exchange", "runtime/local", "runtime/state", "runtime/timer", "runtime/clock", "net"}, "restart strategies are pure decisions"},
	{"hdfs", []string{"runtime", "stream", "kafka", "cmd", "yarn"}, "the HDFS filesystem adapts colinmarc/hdfs to fs"},
	{"fs", []string{"runtime", "stream", "yarn", "hdfs", "kafka", "cmd", "hadoop", "conf"}, "the filesystem interface is a leaf"},
	{"hadoop", []string{"stream", "runtime", "kafka", "cmd", "yarn"}, "hadoop configuration and tokens are a leaf"},
	{"security", []string{"stream", "runtime", "scheduler", "yarn", "hdfs", "kafka", "cmd", "hadoop", "integration"}, "the Kerberos login is a leaf that Hadoop IPC, HDFS and Kafka share"},
}

type pkg struct {
	ImportPath string
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
	if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") || p == "net" || p == "net/http" {
		return p
	}
	return module + "/" + p
}

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// violations lists every forbidden dependency among pkgs.
func violations(pkgs []pkg) (msgs []string, checked int) {
	for _, r := range rules {
		from, exact := strings.CutSuffix(r.from, "$")
		for _, p := range pkgs {
			if exact && p.ImportPath != abs(from) || !exact && !under(p.ImportPath, abs(from)) {
				continue
			}
			checked++
			for _, d := range p.Deps {
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
