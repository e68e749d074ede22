package netexchange

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// reading is a small plain struct record.
type reading struct {
	Sensor int32
	Value  float64
	Valid  bool
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newEndpoint starts an endpoint on a loopback port, closed at the end of
// the test.
func newEndpoint(t testing.TB, opts ...func(*Config)) *Endpoint {
	t.Helper()
	cfg := Config{Log: testLogger(t)}
	for _, o := range opts {
		o(&cfg)
	}
	ep, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func codecOf[T any](t testing.TB) task.BatchCodec {
	t.Helper()
	bc, err := task.TypeOf[T]().BatchCodec()
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// describe renders a buffer for exact comparisons.
func describe(b exchange.Buffer) string {
	switch d := b.Data.(type) {
	case nil:
		return fmt.Sprintf("event %+v", b.Event)
	case *task.Batch[int64]:
		return fmt.Sprintf("int64 %v %v", d.Values, d.Ts)
	case *task.Batch[reading]:
		return fmt.Sprintf("reading %v %v", d.Values, d.Ts)
	}
	return fmt.Sprintf("unexpected %T", b.Data)
}

// receive reads buffers from g until want channels have ended, or a buffer
// carries an error. It releases every buffer.
func receive(ctx context.Context, g *Gate, want int, codecs []task.BatchCodec) (map[int][]string, error) {
	got := map[int][]string{}
	ended := 0
	for ended < want {
		select {
		case b := <-g.C():
			if b.Err != nil {
				return got, b.Err
			}
			got[b.Channel] = append(got[b.Channel], fmt.Sprintf("in%d %s", b.Input, describe(b)))
			if b.Event.Kind == exchange.EndOfPartition {
				ended++
			}
			if b.Data != nil {
				codecs[b.Input].ReleaseBatch(b.Data)
			}
			b.Release()
		case <-ctx.Done():
			return got, fmt.Errorf("%d of %d channels ended: %w", ended, want, ctx.Err())
		}
	}
	return got, nil
}

// eventually polls cond until it holds or 10 s passed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling, not synchronisation
	}
}

// proxy forwards TCP connections to target until cut: a network of our own
// that can fail.
type proxy struct {
	lis    net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{lis: lis, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		lis.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// cut breaks every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
