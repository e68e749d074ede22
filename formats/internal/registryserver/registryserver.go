// Package registryserver runs a real schema registry for the formats'
// integration tests: Apicurio Registry (the Confluent API), built from
// Maven Central and run by integration/scripts/registry.sh on a free
// loopback port. A registry that cannot be built or started fails the test:
// it is never skipped.
//
// With SLUICE_SCHEMA_REGISTRY_URL set, Start uses that registry instead.
package registryserver

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Start returns the URL of a running registry, stopped when t ends.
func Start(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("SLUICE_SCHEMA_REGISTRY_URL"); u != "" {
		return u
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "integration", "scripts", "registry.sh")
	if out, err := exec.Command(script, "build").CombinedOutput(); err != nil {
		t.Fatalf("building the schema registry: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(script, "run", dir, "--port", fmt.Sprint(port), "--exit-on-stdin-eof")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", script, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close() // the script stops the registry when its standard input closes
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if f, err := os.Open(filepath.Join(dir, "READY")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if u, ok := strings.CutPrefix(sc.Text(), "url="); ok {
					f.Close()
					return u
				}
			}
			f.Close()
		}
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("the schema registry exited before it was ready: %v\n%s", err, tail(string(log), 4000))
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schema registry was not ready within 3 minutes (log in %s)", dir)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
