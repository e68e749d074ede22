package sql

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/internal/runtime/core"
)

// A SELECT on a cluster sends its result back to the client as Flink's
// collect sink does: the client listens on a TCP port of the address it
// reaches the JobManager from (Cluster.ResultHost), and the job's one
// collect sink subtask connects to it and writes each change as a line of
// JSON, after a line with a token the client made for the query, which
// the client checks. The address and the token travel in the job's
// configuration (collectAddressKey, collectTokenKey). After a failover the
// restarted sink connects again and rows since the last checkpoint may be
// shown again: the client's view is at least once.
const (
	collectAddressKey = "sql-client.collect.address"
	collectTokenKey   = "sql-client.collect.token"
)

// collectLine is one change of a result on the wire.
type collectLine struct {
	Kind  core.RowKind `json:"k"`
	Cells []string     `json:"c"`
}

// collector is the client's end: it accepts the sink's connections and
// hands their rows to a view, one connection at a time.
type collector struct {
	l     net.Listener
	token string
	rows  func(kind core.RowKind, cells []string) error
	done  chan struct{} // closed when the accept loop has ended
	mu    sync.Mutex
	conn  net.Conn // the connection being read (nil: none)
	err   error
}

// listenCollect opens the client's end on host.
func listenCollect(host string, rows func(core.RowKind, []string) error) (*collector, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("sql: listening for the SELECT's result on %s: %w", host, err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	c := &collector{l: l, token: hex.EncodeToString(b), rows: rows, done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *collector) addr() string { return c.l.Addr().String() }

// run accepts connections until the listener is closed.
func (c *collector) run() {
	defer close(c.done)
	for {
		conn, err := c.l.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		c.conn = conn
		c.mu.Unlock()
		err = c.read(conn)
		conn.Close()
		c.mu.Lock()
		c.conn = nil
		if err != nil && c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

// read takes one connection's rows: a token line, then changes.
func (c *collector) read(conn net.Conn) error {
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	if !sc.Scan() || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(sc.Text())), []byte(c.token)) != 1 {
		return nil // not the query's sink: ignored
	}
	for sc.Scan() {
		var l collectLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("sql: a malformed row of the SELECT's result: %w", err)
		}
		if err := c.rows(l.Kind, l.Cells); err != nil {
			return err
		}
	}
	return nil
}

// close ends the collector once the job has ended: the connection being
// read is read to its end (the sink's process exits with the job) for up
// to wait, then closed.
func (c *collector) close(wait time.Duration) error {
	c.l.Close()
	select {
	case <-c.done:
	case <-time.After(wait):
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
		}
		c.mu.Unlock()
		<-c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// collectSender is the sink's end, in the job on the cluster: it
// connects on the first row and writes each row as a line.
type collectSender struct {
	addr, token string
	conn        net.Conn
	w           *bufio.Writer
}

func (s *collectSender) send(kind core.RowKind, cells []string) error {
	if s.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", s.addr)
		if err != nil {
			return fmt.Errorf("sql: sending the SELECT's result to the client at %s: %w", s.addr, err)
		}
		s.conn, s.w = conn, bufio.NewWriter(conn)
		if _, err := io.WriteString(s.w, s.token+"\n"); err != nil {
			return err
		}
	}
	b, err := json.Marshal(collectLine{Kind: kind, Cells: cells})
	if err != nil {
		return err
	}
	s.w.Write(b)
	s.w.WriteByte('\n')
	// Each row goes out as it comes, as the local client shows it.
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("sql: sending the SELECT's result to the client at %s: %w", s.addr, err)
	}
	return nil
}

// changelogPrinter shows a result as its changes, one a line, as the
// print connector writes them (+I[c1, 1.00]).
func changelogPrinter(w io.Writer) func(core.RowKind, []string) error {
	return func(kind core.RowKind, cells []string) error {
		_, err := fmt.Fprintf(w, "%s[%s]\n", kind, strings.Join(cells, ", "))
		return err
	}
}

// errNoResultTarget: a SELECT whose result has no client to go to.
var errNoResultTarget = errors.New("sql: no client to send the SELECT's result to")
