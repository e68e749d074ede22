package netexchange

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// upstream sends batches and events on its channels the way a task's
// writer does, and records what each channel must deliver.
type upstream struct {
	name    string
	senders []exchange.Sender
	// want[i] are the descriptions senders[i]'s receiver must see.
	want  [][]string
	input int
}

func (u *upstream) send(ctx context.Context, i int, b exchange.Buffer) error {
	u.want[i] = append(u.want[i], fmt.Sprintf("in%d %s", u.input, describe(b)))
	if u.senders[i].TrySend(b) {
		return nil
	}
	return u.senders[i].Send(ctx, b)
}

func (u *upstream) event(ctx context.Context, ev exchange.Event) error {
	for i := range u.senders {
		if err := u.send(ctx, i, exchange.Buffer{Event: ev}); err != nil {
			return fmt.Errorf("%s channel %d: %w", u.name, i, err)
		}
	}
	return nil
}

// runInts hash-partitions int64 records over its channels (by value), with
// watermarks, a barrier and an idle period in between.
func (u *upstream) runInts(ctx context.Context, seed int64, batches int) error {
	u.want = make([][]string, len(u.senders))
	for n := range batches {
		pending := make([]*task.Batch[int64], len(u.senders))
		for j := range 1 + n%40 {
			v := seed*1_000_000 + int64(n*100+j)
			ch := int(uint64(v*2654435761) % uint64(len(u.senders)))
			if pending[ch] == nil {
				pending[ch] = &task.Batch[int64]{}
			}
			ts := v
			if j%7 == 3 {
				ts = math.MinInt64 // no timestamp
			}
			pending[ch].Values = append(pending[ch].Values, v)
			pending[ch].Ts = append(pending[ch].Ts, ts)
		}
		for ch, b := range pending {
			if b != nil {
				if err := u.send(ctx, ch, exchange.Buffer{Data: b}); err != nil {
					return fmt.Errorf("%s channel %d: %w", u.name, ch, err)
				}
			}
		}
		if err := u.events(ctx, n, batches); err != nil {
			return err
		}
	}
	return u.event(ctx, exchange.Event{Kind: exchange.EndOfPartition})
}

// runReadings broadcasts struct records to every channel.
func (u *upstream) runReadings(ctx context.Context, batches int) error {
	u.want = make([][]string, len(u.senders))
	for n := range batches {
		for ch := range u.senders {
			b := &task.Batch[reading]{}
			for j := range 1 + n%5 {
				b.Values = append(b.Values, reading{Sensor: int32(j), Value: float64(n) / 4, Valid: j%2 == 0})
				b.Ts = append(b.Ts, int64(n))
			}
			if err := u.send(ctx, ch, exchange.Buffer{Data: b}); err != nil {
				return fmt.Errorf("%s channel %d: %w", u.name, ch, err)
			}
		}
		if err := u.events(ctx, n, batches); err != nil {
			return err
		}
	}
	return u.event(ctx, exchange.Event{Kind: exchange.EndOfPartition})
}

func (u *upstream) events(ctx context.Context, n, batches int) error {
	switch {
	case n%10 == 9:
		return u.event(ctx, exchange.Event{Kind: exchange.Watermark, Watermark: int64(n) * 1000})
	case n == batches/2:
		return u.event(ctx, exchange.Event{Kind: exchange.Barrier, CheckpointID: 7, Options: 3})
	case n == batches/3:
		if err := u.event(ctx, exchange.Event{Kind: exchange.Idle}); err != nil {
			return err
		}
		return u.event(ctx, exchange.Event{Kind: exchange.Active})
	}
	return nil
}

// Two downstream subtasks on endpoints b and c read input 0 (int64, hash
// partitioned by two upstream subtasks on a and b) and input 1 (struct
// records broadcast by one upstream subtask on a). The gate on b mixes a
// local channel with remote ones; the gate on c is built after its senders
// started. Every channel must deliver exactly what was sent, in order.
func TestFanOutAcrossEndpoints(t *testing.T) {
	ctx := testCtx(t)
	a, b, c := newEndpoint(t), newEndpoint(t), newEndpoint(t)
	ints, readings := codecOf[int64](t), codecOf[reading](t)
	codecs := []task.BatchCodec{ints, readings}
	key0 := GateKey{Scope: "job/0", Chain: 2, Subtask: 0}
	key1 := GateKey{Scope: "job/0", Chain: 2, Subtask: 1}

	// Channels of both gates: 0 from u0 (a), 1 from u1 (b), 2 from r0 (a).
	gb := b.NewGate(key0, 2)
	gb.AddRemote(0, ints)
	gb.AddLocal(0)
	gb.AddRemote(1, readings)
	gate0, local0, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer gate0.Close()
	if local0[0] != nil || local0[1] == nil || local0[2] != nil {
		t.Fatalf("local senders %v: only channel 1 is local", local0)
	}

	sender := func(ep *Endpoint, peer *Endpoint, key GateKey, ch int, bc task.BatchCodec) exchange.Sender {
		t.Helper()
		s, err := ep.Sender(ctx, peer.Addr(), key, ch, bc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	u0 := &upstream{name: "u0", input: 0, senders: []exchange.Sender{sender(a, b, key0, 0, ints), sender(a, c, key1, 0, ints)}}
	u1 := &upstream{name: "u1", input: 0, senders: []exchange.Sender{local0[1], sender(b, c, key1, 1, ints)}}
	r0 := &upstream{name: "r0", input: 1, senders: []exchange.Sender{sender(a, b, key0, 2, readings), sender(a, c, key1, 2, readings)}}

	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Add(3)
	go func() { defer wg.Done(); errs[0] = u0.runInts(ctx, 1, 300) }()
	go func() { defer wg.Done(); errs[1] = u1.runInts(ctx, 2, 200) }()
	go func() { defer wg.Done(); errs[2] = r0.runReadings(ctx, 150) }()

	// The senders to c wait for their credits until c has the gate.
	gc := c.NewGate(key1, 3)
	gc.AddRemote(0, ints)
	gc.AddRemote(0, ints)
	gc.AddRemote(1, readings)
	gate1, local1, err := gc.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer gate1.Close()
	if local1[0] != nil || local1[1] != nil || local1[2] != nil {
		t.Fatalf("local senders %v: all channels are remote", local1)
	}

	var got [2]map[int][]string
	var rerrs [2]error
	var rwg sync.WaitGroup
	rwg.Add(2)
	go func() { defer rwg.Done(); got[0], rerrs[0] = receive(ctx, gate0, 3, codecs) }()
	go func() { defer rwg.Done(); got[1], rerrs[1] = receive(ctx, gate1, 3, codecs) }()
	wg.Wait()
	rwg.Wait()
	for _, err := range append(errs, rerrs[:]...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for d := range 2 {
		for ch, u := range []*upstream{u0, u1, r0} {
			if !reflect.DeepEqual(got[d][ch], u.want[d]) {
				t.Errorf("downstream %d channel %d (%s): got %d buffers, want %d\nfirst got:  %.200q\nfirst want: %.200q",
					d, ch, u.name, len(got[d][ch]), len(u.want[d]), got[d][ch], u.want[d])
			}
		}
	}

	// Each gate received, in bytes, what the remote senders into it sent:
	// the encoded batches (the local channel carries no bytes).
	sent := func(ss ...exchange.Sender) int64 {
		var n int64
		for _, x := range ss {
			n += x.(*Sender).BytesSent()
		}
		return n
	}
	for _, g := range []struct {
		gate *Gate
		from []exchange.Sender
	}{{gate0, []exchange.Sender{u0.senders[0], r0.senders[0]}}, {gate1, []exchange.Sender{u0.senders[1], u1.senders[1], r0.senders[1]}}} {
		if got, want := g.gate.BytesReceived(), sent(g.from...); got != want || got == 0 {
			t.Errorf("%s received %d bytes; its remote senders sent %d", g.gate.Key(), got, want)
		}
	}

	// a and b exchanged both ways (b's channel 1 of c aside): one stream
	// per pair of endpoints.
	for _, ep := range []*Endpoint{a, b, c} {
		ep.mu.Lock()
		n := len(ep.mu.sessions)
		ep.mu.Unlock()
		if n != 2 {
			t.Errorf("%s has %d sessions, want one per peer (2)", ep.Addr(), n)
		}
	}
}

// Channels between two endpoints in both directions share one stream.
func TestOneStreamPerPeerPair(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	ints := codecOf[int64](t)
	gates := map[*Endpoint]*Gate{}
	for _, ep := range []*Endpoint{a, b} {
		gb := ep.NewGate(GateKey{Scope: "s", Chain: 1}, 1)
		gb.AddRemote(0, ints)
		g, _, err := gb.Build()
		if err != nil {
			t.Fatal(err)
		}
		gates[ep] = g
	}
	for _, p := range [][2]*Endpoint{{a, b}, {b, a}} {
		s, err := p[0].Sender(ctx, p[1].Addr(), GateKey{Scope: "s", Chain: 1}, 0, ints)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}}); err != nil {
			t.Fatal(err)
		}
		if _, err := receive(ctx, gates[p[1]], 1, []task.BatchCodec{ints}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ep := range []*Endpoint{a, b} {
		ep.mu.Lock()
		n := len(ep.mu.sessions)
		ep.mu.Unlock()
		if n != 1 {
			t.Errorf("%s has %d sessions, want 1", ep.Addr(), n)
		}
	}
}

// A receiver that does not release keeps its sender at its credits: no
// more buffers cross the network than the gate granted.
func TestBackpressureBoundsInFlightBuffers(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	ints := codecOf[int64](t)
	key := GateKey{Scope: "bp", Chain: 1}
	const credits = 3
	gb := b.NewGate(key, credits)
	gb.AddRemote(0, ints)
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Sender(ctx, b.Addr(), key, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(v int64) exchange.Buffer {
		return exchange.Buffer{Data: &task.Batch[int64]{Values: []int64{v}, Ts: []int64{v}}}
	}
	for i := range credits {
		if err := s.Send(ctx, batch(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the credited buffers to arrive", func() bool { return len(gate.C()) == credits })
	// Nothing was released, so no credit can be on its way.
	if s.TrySend(batch(99)) || s.Credits() != 0 {
		t.Fatal("a sender with its credits spent must not send")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Send(cancelled, batch(99)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a blocked send must end with its context: %v", err)
	}
	held := make([]exchange.Buffer, 0, credits)
	for range credits {
		held = append(held, <-gate.C())
	}
	if s.TrySend(batch(99)) {
		t.Fatal("receiving is not releasing: the credit must come back only on Release")
	}
	held[0].Release()
	eventually(t, "the released credit", func() bool { return s.Credits() == 1 })
	if !s.TrySend(batch(3)) || s.TrySend(batch(99)) {
		t.Fatal("one release must allow exactly one more buffer")
	}
	for _, h := range held[1:] {
		h.Release()
	}

	// Streaming against a slow receiver: a send never gets ahead of the
	// releases by more than the credits. So far 4 buffers were sent and 3
	// released (batch(3) is still queued).
	const n = 2000
	var released atomic.Int64
	released.Store(3)
	sendErr := make(chan error, 1)
	go func() {
		for i := range n {
			if err := s.Send(ctx, batch(int64(100+i))); err != nil {
				sendErr <- err
				return
			}
			// Credits come only from releases, each counted before it is made.
			if sent, rel := int64(4+i+1), released.Load(); sent > credits+rel {
				sendErr <- fmt.Errorf("sent %d buffers with %d credits and %d releases", sent, credits, rel)
				return
			}
		}
		sendErr <- s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}})
	}()
	count := 0
	for b := range gate.C() {
		if b.Err != nil {
			t.Fatal(b.Err)
		}
		if b.Event.Kind == exchange.EndOfPartition {
			break
		}
		count++
		if len(gate.C()) > credits {
			t.Fatalf("%d buffers queued at the receiver, beyond %d credits", len(gate.C()), credits)
		}
		ints.ReleaseBatch(b.Data)
		released.Add(1)
		b.Release()
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if count != n+1 { // batch(3) and the n streamed
		t.Fatalf("received %d batches, want %d", count, n+1)
	}
}

// A broken connection fails the senders and gates on both sides at once,
// including a sender blocked for credits.
func TestConnectionLossFailsBothSides(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	px := newProxy(t, b.Addr())
	ints := codecOf[int64](t)
	key := GateKey{Scope: "loss", Chain: 3}
	gb := b.NewGate(key, 1)
	gb.AddRemote(0, ints)
	gb.AddRemote(0, ints)
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	flowing, err := a.Sender(ctx, px.addr(), key, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	stuck, err := a.Sender(ctx, px.addr(), key, 1, ints)
	if err != nil {
		t.Fatal(err)
	}
	one := exchange.Buffer{Data: &task.Batch[int64]{Values: []int64{1}, Ts: []int64{1}}}
	if err := flowing.Send(ctx, one); err != nil {
		t.Fatal(err)
	}
	if err := stuck.Send(ctx, one); err != nil {
		t.Fatal(err)
	}
	// Channel 0's buffer is released, channel 1's held: its sender blocks.
	var held exchange.Buffer
	for range 2 {
		buf := <-gate.C()
		if buf.Channel == 0 {
			buf.Release()
		} else {
			held = buf
		}
	}
	stuckErr := make(chan error, 1)
	go func() { stuckErr <- stuck.Send(ctx, one) }()

	px.cut()

	select {
	case buf := <-gate.C():
		var ce *ChannelError
		if !errors.Is(buf.Err, ErrConnectionLost) || !errors.As(buf.Err, &ce) || ce.Key != key {
			t.Fatalf("gate delivered %+v, want a connection loss", buf)
		}
		if !errors.Is(gate.Err(), ErrConnectionLost) {
			t.Fatalf("gate error %v", gate.Err())
		}
	case <-ctx.Done():
		t.Fatal("the gate did not fail")
	}
	if err := <-stuckErr; !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("blocked sender: %v", err)
	}
	var err2 error
	eventually(t, "the flowing sender to fail", func() bool {
		err2 = flowing.Send(ctx, one)
		return err2 != nil
	})
	var ce *ChannelError
	if !errors.Is(err2, ErrConnectionLost) || !errors.As(err2, &ce) || ce.Channel != 0 || ce.Peer != px.addr() {
		t.Fatalf("flowing sender: %v", err2)
	}
	held.Release() // harmless after the failure

	// The next sender dials again.
	gb = b.NewGate(GateKey{Scope: "loss", Chain: 4}, 1)
	gb.AddRemote(0, ints)
	g2, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := a.Sender(ctx, px.addr(), GateKey{Scope: "loss", Chain: 4}, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}}); err != nil {
		t.Fatal(err)
	}
	if _, err := receive(ctx, g2, 1, []task.BatchCodec{ints}); err != nil {
		t.Fatal(err)
	}
}

// Closing an endpoint fails its peers' senders and gates with a connection
// loss, and its own with ErrClosed.
func TestEndpointCloseFailsPeers(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	ints := codecOf[int64](t)
	ka, kb := GateKey{Scope: "c", Chain: 1}, GateKey{Scope: "c", Chain: 2}
	build := func(ep *Endpoint, k GateKey) *Gate {
		gb := ep.NewGate(k, 1)
		gb.AddRemote(0, ints)
		g, _, err := gb.Build()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ga, gbb := build(a, ka), build(b, kb)
	toB, err := a.Sender(ctx, b.Addr(), kb, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	toA, err := b.Sender(ctx, a.Addr(), ka, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "credits", func() bool { return toB.Credits() == 1 && toA.Credits() == 1 })
	b.Close()
	for name, g := range map[string]*Gate{"peer's gate": ga, "own gate": gbb} {
		select {
		case buf := <-g.C():
			if buf.Err == nil {
				t.Fatalf("%s delivered %+v", name, buf)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not fail", name)
		}
	}
	if !errors.Is(ga.Err(), ErrConnectionLost) && !errors.Is(ga.Err(), ErrProtocol) {
		t.Fatalf("peer's gate: %v", ga.Err())
	}
	if !errors.Is(gbb.Err(), ErrClosed) || !errors.Is(gbb.Err(), exchange.ErrClosed) {
		t.Fatalf("own gate: %v", gbb.Err())
	}
	idle := exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}}
	// The first send may still find the credit; the next waits for one
	// and gets the failure.
	err = toB.Send(ctx, idle)
	if err == nil {
		err = toB.Send(ctx, idle)
	}
	if !errors.Is(err, ErrConnectionLost) && !errors.Is(err, ErrProtocol) {
		t.Fatalf("peer's sender: %v", err)
	}
	if err := toA.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("own sender: %v", err)
	}
	if _, err := b.Sender(ctx, a.Addr(), ka, 0, ints); !errors.Is(err, ErrClosed) {
		t.Fatalf("sender after close: %v", err)
	}
	if _, _, err := b.NewGate(GateKey{Scope: "x"}, 1).Build(); !errors.Is(err, ErrClosed) {
		t.Fatalf("gate after close: %v", err)
	}
}

// Opening a channel a gate does not have is refused with an error naming
// the gate and the channel; so is a gate that never comes.
func TestUnknownChannelsAreRefused(t *testing.T) {
	ctx := testCtx(t)
	a := newEndpoint(t)
	b := newEndpoint(t, func(c *Config) { c.OpenTimeout = 50 * time.Millisecond })
	ints := codecOf[int64](t)
	key := GateKey{Scope: "job/1", Chain: 5, Subtask: 2}
	gb := b.NewGate(key, 1)
	gb.AddLocal(0)
	gb.AddRemote(0, ints)
	gate, _, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Sender(ctx, b.Addr(), key, 1, ints)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first sender's credit", func() bool { return first.Credits() == 1 })

	cases := []struct {
		name    string
		key     GateKey
		channel int
		want    error
		text    string
	}{
		{"out of range", key, 7, ErrUnknownChannel, `channel 7 of gate "job/1"/5/2, which has 2 channels`},
		{"local", key, 0, ErrUnknownChannel, "channel 0 of gate \"job/1\"/5/2 is local"},
		{"already open", key, 1, ErrUnknownChannel, "is already open from"},
		{"unknown gate", GateKey{Scope: "job/1", Chain: 6}, 0, ErrUnknownGate, `no gate "job/1"/6/0 on`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := a.Sender(ctx, b.Addr(), tc.key, tc.channel, ints)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}})
			var ce *ChannelError
			if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Channel != tc.channel || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.text)
			}
		})
	}
	// The refusals left the connection and the first channel alone.
	if err := first.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}}); err != nil {
		t.Fatal(err)
	}
	got, err := receive(ctx, gate, 1, []task.BatchCodec{ints})
	if err != nil || len(got[1]) != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A gate closed while its sender still sends refuses it; a sender that
// abandons its channel before its end of partition fails the gate.
func TestClosingEitherEnd(t *testing.T) {
	ctx := testCtx(t)
	a, b := newEndpoint(t), newEndpoint(t)
	ints := codecOf[int64](t)
	build := func(k GateKey) *Gate {
		gb := b.NewGate(k, 1)
		gb.AddRemote(0, ints)
		g, _, err := gb.Build()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	t.Run("gate closed", func(t *testing.T) {
		k := GateKey{Scope: "close", Chain: 1}
		g := build(k)
		s, err := a.Sender(ctx, b.Addr(), k, 0, ints)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "credit", func() bool { return s.Credits() == 1 })
		g.Close()
		if !errors.Is(g.Err(), ErrClosed) {
			t.Fatalf("closed gate: %v", g.Err())
		}
		idle := exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}}
		err = s.Send(ctx, idle) // may still find its credit
		if err == nil {
			err = s.Send(ctx, idle)
		}
		if !errors.Is(err, ErrGateClosed) {
			t.Fatalf("got %v", err)
		}
		// The key is free again (a new attempt would use another scope).
		build(k).Close()
	})
	t.Run("sender closed", func(t *testing.T) {
		k := GateKey{Scope: "close", Chain: 2}
		g := build(k)
		defer g.Close()
		s, err := a.Sender(ctx, b.Addr(), k, 0, ints)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		buf := <-g.C()
		if !errors.Is(buf.Err, ErrSenderClosed) {
			t.Fatalf("got %+v", buf)
		}
		if err := s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}}); !errors.Is(err, ErrClosed) {
			t.Fatalf("send after close: %v", err)
		}
	})
	t.Run("ended sender", func(t *testing.T) {
		k := GateKey{Scope: "close", Chain: 3}
		g := build(k)
		defer g.Close()
		s, err := a.Sender(ctx, b.Addr(), k, 0, ints)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.EndOfPartition}}); err != nil {
			t.Fatal(err)
		}
		s.Close() // after its end: nothing to tell
		if _, err := receive(ctx, g, 1, []task.BatchCodec{ints}); err != nil {
			t.Fatal(err)
		}
		if g.Err() != nil {
			t.Fatalf("gate failed: %v", g.Err())
		}
		if err := s.Send(ctx, exchange.Buffer{Event: exchange.Event{Kind: exchange.Idle}}); !errors.Is(err, ErrClosed) {
			t.Fatalf("send after the end: %v", err)
		}
	})
}

// A peer that cannot be reached is a connection loss, reported at once.
func TestUnreachablePeer(t *testing.T) {
	ctx := testCtx(t)
	a := newEndpoint(t)
	gone := newEndpoint(t)
	addr := gone.Addr()
	gone.Close()
	_, err := a.Sender(ctx, addr, GateKey{Scope: "u"}, 0, codecOf[int64](t))
	var ce *ChannelError
	if !errors.Is(err, ErrConnectionLost) || !errors.As(err, &ce) || ce.Peer != addr {
		t.Fatalf("got %v", err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := Config{Address: "nohost", MessageBytes: -1, MaxMessageBytes: 10, OpenTimeout: -1}.withDefaults().Validate()
	for _, want := range []string{`address "nohost"`, "message bytes -1", "max message bytes 10", "open timeout -1ns"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q", err, want)
		}
	}
	if _, err := Listen(Config{Address: "nohost"}); err == nil {
		t.Fatal("Listen must validate")
	}
	if err := (Config{}).withDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
