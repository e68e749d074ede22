// Command testtm stands in for the TaskManager in yarndeploy's integration
// tests. It checks what a TaskManager container must get (its resource id
// and the JobManager's address as dynamic properties, the configuration and
// Hadoop configuration in its working directory, its log directory, tokens
// without the AMRMToken), writes a marker file to HDFS, reports to the test
// ApplicationMaster over TCP and does what it answers: "exit N" or "stay".
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
)

func main() {
	props := map[string]string{}
	for _, a := range os.Args[1:] {
		k, v, err := conf.ParseDynamicProperty(a)
		if err != nil {
			fail("argument %q: %v", a, err)
		}
		props[k] = v
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	id := props["taskmanager.resource-id"]
	if id == "" || id != os.Getenv("CONTAINER_ID") {
		problem("taskmanager.resource-id %q, CONTAINER_ID %q", id, os.Getenv("CONTAINER_ID"))
	}
	if v := props["test.quoting"]; v != `it's "$HOME" \ ok` {
		problem("test.quoting arrived as %q", v)
	}
	c, _, err := conf.Load(conf.Sources{ConfDir: os.Getenv(conf.EnvConfDir)})
	if err != nil {
		problem("loading config.yaml from SLUICE_CONF_DIR=%q: %v", os.Getenv(conf.EnvConfDir), err)
	} else if got := conf.Get(c, conf.TaskManagerProcessMemory); got != 128*conf.MiB {
		problem("config.yaml: taskmanager.memory.process.size = %v, want 128m", got)
	}
	logDirs := strings.Split(os.Getenv("LOG_DIRS"), ",")
	if os.Getenv("SLUICE_LOG_DIR") != logDirs[0] || logDirs[0] == "" {
		problem("SLUICE_LOG_DIR %q, LOG_DIRS %q", os.Getenv("SLUICE_LOG_DIR"), os.Getenv("LOG_DIRS"))
	}
	if creds, err := hadoop.ReadTokenFile(os.Getenv(hadoop.EnvTokenFile)); err != nil {
		problem("token file: %v", err)
	} else {
		if _, ok := creds.TokenByKind(hadoop.KindAMRMToken); ok {
			problem("the TaskManager got the AMRMToken")
		}
		if _, ok := creds.TokenByKind("SLUICE_TEST"); !ok {
			problem("the user's token did not reach the TaskManager (tokens %v)", creds.TokenAliases())
		}
	}

	// A marker on HDFS, written with the staged Hadoop configuration as the
	// submitting user.
	if dir := os.Getenv("SLUICE_TEST_MARKER_DIR"); dir == "" {
		problem("SLUICE_TEST_MARKER_DIR is not set (containerized.taskmanager.env.*)")
	} else if err := writeMarker(dir, id); err != nil {
		problem("marker: %v", err)
	}

	status := "ok"
	if len(problems) > 0 {
		status = "problems: " + strings.Join(problems, "; ")
	}
	fmt.Printf("taskmanager test: resource id %s, pid %d, %s\n", id, os.Getpid(), status)

	addr := net.JoinHostPort(props["jobmanager.rpc.address"], props["jobmanager.rpc.port"])
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		fail("dialling the ApplicationMaster at %s: %v", addr, err)
	}
	fmt.Fprintf(conn, "%s %s\n", id, strconv.Quote(status))
	answer, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		fail("reading the ApplicationMaster's answer: %v", err)
	}
	answer = strings.TrimSpace(answer)
	fmt.Printf("taskmanager test: told to %q\n", answer)
	if code, ok := strings.CutPrefix(answer, "exit "); ok {
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	// Stay until YARN stops the container.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Println("taskmanager test: stopped by a signal")
}

func writeMarker(dir, id string) error {
	h, err := hadoop.LoadFromEnvironment(os.Getenv)
	if err != nil {
		return err
	}
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: h, Getenv: os.Getenv}, "")
	if err != nil {
		return err
	}
	fsys, err := hdfs.Dial(o)
	if err != nil {
		return err
	}
	defer fsys.Close()
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	w, err := fsys.Create(path.Join(dir, id))
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%s ran as %s\n", id, o.User); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "taskmanager test: "+format+"\n", args...)
	os.Exit(2)
}
