// Command testam is the ApplicationMaster of yarndeploy's integration
// tests: package yarnam's ApplicationMaster with a test Host in place of the
// JobManager components. Mode (SLUICE_TEST_AM_MODE):
//
//   - containers (default): asks the driver for 2 TaskManagers (testtm);
//     tells the first to exit with code 3, expects it reported stopped and
//     replaced, keeps the other two; then ends the application SUCCEEDED
//     with diagnostics holding what it saw and when, or FAILED with what
//     went wrong.
//   - idle: runs until stopped (for kill tests).
package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice/sluice/cluster/yarnam"
	"github.com/sluice/sluice/yarn"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	host := containers
	if os.Getenv("SLUICE_TEST_AM_MODE") == "idle" {
		host = idle
	}
	err := yarnam.Run(ctx, yarnam.Config{
		Getenv: os.Getenv, Logger: log,
		TaskManagerProperties: map[string]string{"test.quoting": `it's "$HOME" \ ok`},
	}, host)
	if err != nil {
		log.Error("testam: ApplicationMaster failed", "err", err)
		os.Exit(1)
	}
}

func idle(ctx context.Context, s *yarnam.Session) yarnam.Final {
	err := s.Driver.Run(ctx, stops{})
	return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: fmt.Sprintf("idle test AM: driver ended: %v", err)}
}

type stopped struct{ id, diag string }

type stops struct{ ch chan stopped }

func (s stops) WorkerStopped(id, diag string) {
	if s.ch != nil {
		s.ch <- stopped{id, diag}
	}
}

type hello struct {
	id, status string
	at         time.Time
	conn       net.Conn
}

func containers(ctx context.Context, s *yarnam.Session) yarnam.Final {
	start := time.Now()
	log := s.Logger
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		s.RPC.Close() // unblocks Accept
		wg.Wait()
	}()
	events := stops{ch: make(chan stopped, 16)}
	driverDone := make(chan error, 1)
	wg.Go(func() { driverDone <- s.Driver.Run(ctx, events) })
	hellos := make(chan hello)
	wg.Go(func() {
		for {
			conn, err := s.RPC.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				line, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					conn.Close()
					return
				}
				id, quoted, _ := strings.Cut(strings.TrimSpace(line), " ")
				status, err := strconv.Unquote(quoted)
				if err != nil {
					status = "unparsable hello " + quoted
				}
				select {
				case hellos <- hello{id: id, status: status, at: time.Now(), conn: conn}:
				case <-ctx.Done():
					conn.Close()
				}
			})
		}
	})

	failed := func(format string, args ...any) yarnam.Final {
		msg := fmt.Sprintf(format, args...)
		log.Error("testam: " + msg)
		return yarnam.Final{Status: yarn.FinalFailed, Diagnostics: "test AM failed: " + msg}
	}
	s.Driver.SetRequired(2)
	var (
		exited    string // the TaskManager told to exit
		stopDiag  string
		staying   []string
		firstAt   time.Time
		runningAt time.Time
	)
	deadline := time.NewTimer(3 * time.Minute)
	defer deadline.Stop()
	for len(staying) < 2 || stopDiag == "" {
		select {
		case h := <-hellos:
			log.Info("testam: TaskManager said hello", "id", h.id, "status", h.status)
			if h.status != "ok" {
				h.conn.Close()
				return failed("TaskManager %s: %s", h.id, h.status)
			}
			if firstAt.IsZero() {
				firstAt = h.at
			}
			answer := "stay"
			if exited == "" {
				exited, answer = h.id, "exit 3"
			} else {
				staying = append(staying, h.id)
				if len(staying) == 2 {
					runningAt = h.at
				}
			}
			fmt.Fprintln(h.conn, answer)
			if answer != "stay" {
				h.conn.Close()
			}
		case st := <-events.ch:
			log.Info("testam: worker stopped", "id", st.id, "diagnostics", st.diag)
			if st.id != exited {
				return failed("unexpected stop of %s: %s", st.id, st.diag)
			}
			if !strings.Contains(st.diag, "exited with code 3") {
				return failed("stop of %s reported as %q, want the exit code", st.id, st.diag)
			}
			stopDiag = st.diag
		case err := <-driverDone:
			return failed("the driver ended: %v", err)
		case <-deadline.C:
			return failed("timed out: exited %q (stop %q), staying %v", exited, stopDiag, staying)
		case <-ctx.Done():
			return failed("stopped: %v", context.Cause(ctx))
		}
	}
	return yarnam.Final{Status: yarn.FinalSucceeded, Diagnostics: fmt.Sprintf(
		"test AM: ok; exited=%s; running=%s; start_ms=%d first_hello_ms=%d all_running_ms=%d; stop=%q",
		exited, strings.Join(staying, ","), start.UnixMilli(), firstAt.UnixMilli(), runningAt.UnixMilli(), stopDiag)}
}
