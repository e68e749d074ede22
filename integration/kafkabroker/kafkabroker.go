// Package kafkabroker runs a real Apache Kafka broker for Sluice's integration tests: one
// process in KRaft mode (combined broker and controller) on 127.0.0.1 with ephemeral ports, from
// Kafka's own jars fetched from Maven Central (integration/kafka/pom.xml), driven by
// integration/scripts/kafka.sh.
//
// Tests normally use [Shared] under [RunMain] (the same function as minicluster.RunMain, so one
// TestMain serves both):
//
//	func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }
//
//	func TestSomething(t *testing.T) {
//		b := kafkabroker.Shared(t)
//		cl, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr))
//	}
//
// With SLUICE_KAFKA_BOOTSTRAP=host:port set, [Shared] uses that broker instead of starting one.
package kafkabroker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/integration/internal/harness"
)

// Options configures [Start].
type Options struct {
	// GSSAPI adds a SASL_PLAINTEXT listener with GSSAPI (Kerberos) for the broker principal of
	// GSSAPI.Principal, logged in from GSSAPI.Keytab against the KDC of GSSAPI.Krb5Conf.
	// Default nil: PLAINTEXT only.
	GSSAPI *GSSAPI
	// Logf receives progress lines (build, start, stop); default: discarded.
	Logf func(format string, args ...any)
}

// GSSAPI is the Kerberos identity of a broker's GSSAPI listener.
type GSSAPI struct {
	Krb5Conf  string // krb5.conf naming the KDC
	Keytab    string // the broker principal's keytab
	Principal string // kafka/localhost@REALM: clients ask for kafka/<advertised host>
}

// Broker is a running Kafka broker.
type Broker struct {
	// Addr is the bootstrap address, host:port.
	Addr string
	// GSSAPIAddr is the bootstrap address of the SASL_PLAINTEXT GSSAPI listener, "" without one.
	GSSAPIAddr string
	// Dir holds server.properties, the log dir (data/) and broker.log; empty for an external
	// broker.
	Dir string
	// Fields holds every key of the READY file (bootstrap, controller, cluster_id,
	// kafka_version, pid, log_dir); empty for an external broker.
	Fields map[string]string

	proc *process
}

// Errors; returned errors wrap one of these.
var (
	// ErrHarness: the scripts are missing or the Maven build failed (JDK, Maven or network).
	ErrHarness = harness.ErrUnavailable
	// ErrExited: the broker exited before it was READY.
	ErrExited = harness.ErrExited
	// ErrUncleanStop: Stop had to signal or kill, or found processes left behind.
	ErrUncleanStop = harness.ErrUncleanStop
	// ErrBadReady: the READY file or SLUICE_KAFKA_BOOTSTRAP is malformed.
	ErrBadReady = errors.New("kafkabroker: bad broker description")
)

var stopTimeouts = harness.StopTimeouts{AfterStdinClose: 60 * time.Second, AfterTerm: 30 * time.Second}

const (
	pollInterval = 200 * time.Millisecond
	// startAttempts: the ports are picked free just before the broker binds them; another
	// process may take one in between, so a start that dies is tried again on new ports.
	startAttempts = 3
)

type process struct {
	*harness.Process
	dir  string // temp dir, removed by Stop
	logf func(string, ...any)

	stopOnce sync.Once
	stopErr  error
}

// Start builds the broker's classpath if needed, formats a fresh log dir, starts the broker and
// waits until it is READY or ctx ends. The broker lives until [Broker.Stop], or until this
// process exits (it watches its stdin).
func Start(ctx context.Context, opts Options) (*Broker, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	script, err := harness.Script("kafka.sh")
	if err != nil {
		return nil, err
	}
	if err := harness.Build(ctx, script, logf); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		b, err := start(ctx, script, opts.GSSAPI, logf)
		if err == nil {
			return b, nil
		}
		lastErr = err
		if !errors.Is(err, ErrExited) || ctx.Err() != nil {
			break
		}
		logf("kafkabroker: attempt %d failed, trying other ports: %v", attempt, err)
	}
	return nil, lastErr
}

func start(ctx context.Context, script string, g *GSSAPI, logf func(string, ...any)) (*Broker, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	args := []string{"run", "", "--port", strconv.Itoa(ports[0]), "--controller-port", strconv.Itoa(ports[1]), "--exit-on-stdin-eof"}
	if g != nil {
		args = append(args, "--gssapi-port", strconv.Itoa(ports[2]), "--krb5-conf", g.Krb5Conf, "--keytab", g.Keytab, "--principal", g.Principal)
	}
	dir, err := os.MkdirTemp("", "sluice-kafka-")
	if err != nil {
		return nil, fmt.Errorf("kafkabroker: %w", err)
	}
	began := time.Now()
	args[1] = dir
	hp, err := harness.Start(script, args, filepath.Join(dir, "run.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &process{Process: hp, dir: dir, logf: logf}
	readyPath := filepath.Join(dir, "READY")
	var b *Broker
	err = hp.WaitReady(ctx, pollInterval, func() (bool, error) {
		data, err := os.ReadFile(readyPath)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("kafkabroker: reading %s: %w", readyPath, err)
		}
		f, err := ParseReady(readyPath, data)
		if err != nil {
			return false, err
		}
		b = &Broker{Addr: f["bootstrap"], GSSAPIAddr: f["gssapi_bootstrap"], Dir: dir, Fields: f}
		if g != nil && b.GSSAPIAddr == "" {
			return false, fmt.Errorf("%w: %s: no gssapi_bootstrap though a GSSAPI listener was asked for", ErrBadReady, readyPath)
		}
		return true, nil
	})
	if err != nil {
		p.stop(true)
		return nil, fmt.Errorf("kafkabroker: %w\nbroker log %s:\n%s", err,
			filepath.Join(dir, "broker.log"), harness.FileTail(filepath.Join(dir, "broker.log"), 30))
	}
	b.proc = p
	logf("kafkabroker: READY in %s at %s (Kafka %s)", time.Since(began).Round(time.Millisecond),
		b.Addr, b.Fields["kafka_version"])
	return b, nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kafkabroker: finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ParseReady parses a broker READY file: key=value lines, with bootstrap (host:port) required.
// path is used in errors only.
func ParseReady(path string, data []byte) (map[string]string, error) {
	f := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%w: %s:%d: want key=value, got %q", ErrBadReady, path, line, text)
		}
		f[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadReady, path, err)
	}
	if err := checkAddr(f["bootstrap"]); err != nil {
		return nil, fmt.Errorf("%w: %s: bootstrap: %v", ErrBadReady, path, err)
	}
	return f, nil
}

func checkAddr(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("want host:port, got %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port of %q is not in 1..65535", s)
	}
	return nil
}

// Stop ends a broker started by [Start]: it closes the broker's stdin (the broker then shuts
// down), sends SIGTERM to its process group if it is alive after 60 s and SIGKILL 30 s later,
// waits for it and removes its directory. A no-op for an external broker; safe to call twice.
func (b *Broker) Stop() error {
	if b == nil || b.proc == nil {
		return nil
	}
	return b.proc.stop(false)
}

func (p *process) stop(keep bool) error {
	p.stopOnce.Do(func() {
		problems := p.Stop(stopTimeouts)
		if keep || len(problems) > 0 {
			p.logf("kafkabroker: stopped; files kept in %s", p.dir)
		} else if err := os.RemoveAll(p.dir); err != nil {
			problems = append(problems, fmt.Sprintf("removing %s: %v", p.dir, err))
		} else {
			p.logf("kafkabroker: stopped")
		}
		if len(problems) > 0 {
			p.stopErr = fmt.Errorf("kafkabroker: %w: %s (files kept in %s)",
				ErrUncleanStop, strings.Join(problems, "; "), p.dir)
		}
	})
	return p.stopErr
}

// EnvBootstrap names the environment variable that points tests at a running broker
// (host:port), such as one started with kafka.sh start DIR.
const EnvBootstrap = "SLUICE_KAFKA_BOOTSTRAP"

const sharedStartTimeout = 10 * time.Minute

// shared is the broker of this test binary (see harness: one TestMain per binary).
var shared struct {
	once   sync.Once
	broker *Broker
	err    error
}

// Shared returns the broker for this test process: $SLUICE_KAFKA_BOOTSTRAP if set, otherwise one
// started on first use and stopped by [RunMain] after the last test. A broker that cannot be had
// fails the test (t.Fatal), never skips it.
func Shared(t testing.TB) *Broker {
	t.Helper()
	if !harness.InMain() {
		t.Fatal("kafkabroker: " + harness.NeedMainMessage)
	}
	shared.once.Do(func() {
		if addr := os.Getenv(EnvBootstrap); addr != "" {
			if err := checkAddr(addr); err != nil {
				shared.err = fmt.Errorf("%w: %s: %v", ErrBadReady, EnvBootstrap, err)
				return
			}
			shared.broker = &Broker{Addr: addr, Fields: map[string]string{"bootstrap": addr}}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		b, err := Start(ctx, Options{Logf: stderrLogf})
		if err != nil {
			shared.err = err
			return
		}
		shared.broker = b
		harness.AtExit("kafkabroker", func(keep bool) error {
			err := b.proc.stop(keep)
			if keep && err == nil {
				fmt.Fprintf(os.Stderr, "kafkabroker: a test failed; broker files kept in %s\n", b.proc.dir)
			}
			return err
		})
	})
	if shared.err != nil {
		t.Fatalf("kafkabroker: no Kafka broker for this test: %v", shared.err)
	}
	return shared.broker
}

// RunMain runs the tests and then stops the servers [Shared] (and minicluster.Shared) started;
// it is minicluster.RunMain. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }
func RunMain(m *testing.M) int { return harness.RunMain(m) }

func stderrLogf(format string, args ...any) {
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

// EnvGSSAPIBootstrap names the environment variable that points tests at a running broker's
// SASL_PLAINTEXT GSSAPI listener (host:port), on the KDC of the secure minicluster that
// $SLUICE_HADOOP_SECURE_CONF_DIR names.
const EnvGSSAPIBootstrap = "SLUICE_KAFKA_GSSAPI_BOOTSTRAP"

var sharedGSSAPI struct {
	once   sync.Once
	broker *Broker
	err    error
}

// SharedGSSAPI returns a broker with a GSSAPI listener for this test process: the one
// $SLUICE_KAFKA_GSSAPI_BOOTSTRAP names (its PLAINTEXT address is then $SLUICE_KAFKA_BOOTSTRAP's),
// otherwise one started on first use with g's identity and stopped by [RunMain]. A broker that
// cannot be had fails the test.
func SharedGSSAPI(t testing.TB, g GSSAPI) *Broker {
	t.Helper()
	if !harness.InMain() {
		t.Fatal("kafkabroker: " + harness.NeedMainMessage)
	}
	sharedGSSAPI.once.Do(func() {
		if addr := os.Getenv(EnvGSSAPIBootstrap); addr != "" {
			plain := os.Getenv(EnvBootstrap)
			for _, a := range []string{addr, plain} {
				if err := checkAddr(a); err != nil {
					sharedGSSAPI.err = fmt.Errorf("%w: %s / %s: %v", ErrBadReady, EnvGSSAPIBootstrap, EnvBootstrap, err)
					return
				}
			}
			sharedGSSAPI.broker = &Broker{Addr: plain, GSSAPIAddr: addr, Fields: map[string]string{"bootstrap": plain, "gssapi_bootstrap": addr}}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		b, err := Start(ctx, Options{GSSAPI: &g, Logf: stderrLogf})
		if err != nil {
			sharedGSSAPI.err = err
			return
		}
		sharedGSSAPI.broker = b
		harness.AtExit("kafkabroker (GSSAPI)", func(keep bool) error {
			err := b.proc.stop(keep)
			if keep && err == nil {
				fmt.Fprintf(os.Stderr, "kafkabroker: a test failed; GSSAPI broker files kept in %s\n", b.proc.dir)
			}
			return err
		})
	})
	if sharedGSSAPI.err != nil {
		t.Fatalf("kafkabroker: no Kafka broker with a GSSAPI listener for this test: %v", sharedGSSAPI.err)
	}
	return sharedGSSAPI.broker
}
