// Command fakejob stands in for a job binary in the TaskManager's tests: it
// records how it was started (arguments, environment, directory, process
// group, deployment file) in the file named by FAKEJOB_OUT and stays alive
// until it is signalled.
//
// FAKEJOB_MODE selects what else it does: "fail" writes to stderr and exits
// with status 3; "child" also starts a child process (recorded in
// FAKEJOB_OUT.child) that stays alive until signalled. With
// FAKEJOB_IGNORE_TERM=1 it ignores SIGTERM.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

type record struct {
	PID        int               `json:"pid"`
	PGID       int               `json:"pgid"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	Dir        string            `json:"dir"`
	Deployment json.RawMessage   `json:"deployment,omitempty"`
	ChildPID   int               `json:"child_pid,omitempty"`
}

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)

	rec := record{PID: os.Getpid(), PGID: syscall.Getpgrp(), Args: os.Args[1:], Env: map[string]string{}}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SLUICE_") || strings.HasPrefix(k, "FAKEJOB_") {
			rec.Env[k] = v
		}
	}
	rec.Dir, _ = os.Getwd()
	if p := os.Getenv("SLUICE_WORKER_DEPLOYMENT"); p != "" {
		var data []byte
		var err error
		if p == "-" { // the deployment on standard input
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(p)
		}
		if err != nil {
			fail("read deployment: %v", err)
		}
		rec.Deployment = data
	}
	out := os.Getenv("FAKEJOB_OUT")
	if os.Getenv("FAKEJOB_MODE") == "child" {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "FAKEJOB_MODE=stay", "FAKEJOB_OUT="+out+".child", "SLUICE_WORKER_DEPLOYMENT=")
		if err := child.Start(); err != nil {
			fail("start child: %v", err)
		}
		rec.ChildPID = child.Process.Pid
	}
	fmt.Println("fakejob started")
	if out != "" {
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(out+".tmp", data, 0o644); err != nil {
			fail("write record: %v", err)
		}
		if err := os.Rename(out+".tmp", out); err != nil {
			fail("write record: %v", err)
		}
	}
	if os.Getenv("FAKEJOB_MODE") == "fail" {
		fmt.Fprintln(os.Stderr, "fakejob: line before")
		fail("boom: deliberate failure")
	}
	for sig := range sigs {
		if os.Getenv("FAKEJOB_IGNORE_TERM") == "1" {
			fmt.Fprintln(os.Stderr, "fakejob: ignoring", sig)
			continue
		}
		fmt.Fprintln(os.Stderr, "fakejob: exiting on", sig)
		os.Exit(0)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakejob: "+format+"\n", args...)
	os.Exit(3)
}
