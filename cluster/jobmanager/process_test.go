package jobmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/testwait"
)

func TestBindAddresses(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		props                      map[string]string
		rpcHost, rpcBind, restBind string
	}{
		{"nothing configured: loopback", nil, "localhost", "127.0.0.1", "127.0.0.1"},
		{"rpc.address names a host", map[string]string{"jobmanager.rpc.address": "jm.example.com"}, "jm.example.com", "jm.example.com", "jm.example.com"},
		{"bind-host all interfaces", map[string]string{"jobmanager.bind-host": "0.0.0.0"}, "localhost", "0.0.0.0", "0.0.0.0"},
		{"rest.bind-address apart", map[string]string{"jobmanager.rpc.address": "10.0.0.1", "rest.bind-address": "0.0.0.0"}, "10.0.0.1", "10.0.0.1", "0.0.0.0"},
		{"bind-host over rpc.address", map[string]string{"jobmanager.rpc.address": "jm", "jobmanager.bind-host": "10.0.0.2"}, "jm", "10.0.0.2", "10.0.0.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := conf.New()
			for k, v := range tc.props {
				c = c.Set(k, v)
			}
			h, b, r := BindAddresses(c)
			if h != tc.rpcHost || b != tc.rpcBind || r != tc.restBind {
				t.Errorf("BindAddresses = %q, %q, %q; want %q, %q, %q", h, b, r, tc.rpcHost, tc.rpcBind, tc.restBind)
			}
		})
	}
}

// syncBuffer is a log sink shared by the JobManager's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A standalone JobManager nobody configured listens on loopback only, its
// RPC endpoint and its REST endpoint.
func TestStandaloneJobManagerBindsLoopbackByDefault(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := conf.New().Set("jobmanager.rpc.port", strconv.Itoa(port)).Set("rest.port", "0")
	var logs syncBuffer
	restAddr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunWith(ctx, Options{Conf: c, Log: slog.New(slog.NewTextHandler(&logs, nil)), WorkDir: t.TempDir(),
			Ready: func(a string) { restAddr <- a }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunWith: %v", err)
		}
	}()
	var rest string
	select {
	case rest = <-restAddr:
	case err := <-done:
		t.Fatalf("RunWith: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the JobManager did not start")
	}
	if host, _, _ := net.SplitHostPort(rest); host != "127.0.0.1" {
		t.Errorf("REST listens on %s, want 127.0.0.1 only", rest)
	}
	want := "rpc_bind=127.0.0.1:" + strconv.Itoa(port)
	testwait.Eventually(t, 10*time.Second, "the JobManager to log its RPC binding", func() bool {
		return strings.Contains(logs.String(), want)
	})
	if !strings.Contains(logs.String(), "rpc=localhost:"+strconv.Itoa(port)) {
		t.Errorf("the JobManager does not advertise localhost:%d:\n%s", port, logs.String())
	}
}

// In application mode the JobManager logs the program's path and the
// number of its arguments, never their values: a program's arguments can
// hold secrets. Nor are they on the program's command line, which every
// local user can list: the program (a script that fails unless its
// command line is empty and SLUICE_PROGRAM_ARGS holds exactly the
// arguments) shows how they reach it.
func TestApplicationModeDoesNotLogTheProgramsArguments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		secrets []string
	}{
		{"a password flag", []string{"--kafka.sasl.password=hunter2-Zq8x"}, []string{"hunter2-Zq8x"}},
		{"a token as the next argument", []string{"--token", "tok-9f1c-secret", "--out", "/tmp/out"}, []string{"tok-9f1c-secret"}},
		{"a JAAS line", []string{`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="pw-77Kq";`},
			[]string{"pw-77Kq", "PlainLoginModule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := filepath.Join(dir, "program")
			// Nothing on the program's command line (which every local
			// user can list): its arguments come in SLUICE_PROGRAM_ARGS.
			script := "#!/bin/sh\n[ \"$#\" -eq 0 ] || { echo \"got $# arguments on the command line\" >&2; exit 3; }\n" +
				"[ \"$SLUICE_PROGRAM_ARGS\" = \"$WANT_ARGS\" ] || { echo 'SLUICE_PROGRAM_ARGS differs' >&2; exit 4; }\necho program ran\n"
			if err := os.WriteFile(prog, []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(tc.args)
			t.Setenv("WANT_ARGS", string(want))
			var logs syncBuffer
			c := conf.New().Set("jobmanager.rpc.port", "0").Set("rest.port", "0")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := RunWith(ctx, Options{Conf: c, Log: slog.New(slog.NewTextHandler(&logs, nil)), WorkDir: t.TempDir(),
				Application: &Application{Binary: prog, Args: tc.args}})
			if err != nil {
				t.Fatalf("the application: %v\n%s", err, logs.String())
			}
			log := logs.String()
			if !strings.Contains(log, "program ran") {
				t.Errorf("the program's output is not in the log:\n%s", log)
			}
			if want := "binary=" + prog + " args=" + strconv.Itoa(len(tc.args)); !strings.Contains(log, want) {
				t.Errorf("the log does not say %q:\n%s", want, log)
			}
			for _, s := range tc.secrets {
				if strings.Contains(log, s) {
					t.Errorf("the JobManager's log holds the argument %q:\n%s", s, log)
				}
			}
		})
	}
}
