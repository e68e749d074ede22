package netexchange

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// GateBuilder declares the channels of a gate, in the order of the
// receiving subtask's channel indexes.
type GateBuilder struct {
	ep      *Endpoint
	key     GateKey
	credits int
	specs   []chanSpec
}

type chanSpec struct {
	input int
	codec task.BatchCodec // nil for a local channel
}

// NewGate starts building the gate of one receiving subtask, whose
// channels get the given credits each (at least 1).
func (ep *Endpoint) NewGate(key GateKey, credits int) *GateBuilder {
	if credits < 1 {
		credits = 1
	}
	return &GateBuilder{ep: ep, key: key, credits: credits}
}

// AddLocal declares the next channel, for logical input `input`, with a
// sender in this process, and returns its index.
func (b *GateBuilder) AddLocal(input int) int {
	b.specs = append(b.specs, chanSpec{input: input})
	return len(b.specs) - 1
}

// AddRemote declares the next channel, for logical input `input`, with a
// sender in another process that decodes with codec, and returns its
// index. The sender opens it with Endpoint.Sender and this index.
func (b *GateBuilder) AddRemote(input int, codec task.BatchCodec) int {
	b.specs = append(b.specs, chanSpec{input: input, codec: codec})
	return len(b.specs) - 1
}

// Build registers the gate with the endpoint, grants credits to the remote
// senders that already opened their channels, and returns the gate (the
// subtask's inbox) and, indexed by channel, the senders of the local
// channels (nil for remote ones).
func (b *GateBuilder) Build() (*Gate, []exchange.Sender, error) {
	if err := b.key.validate(); err != nil {
		return nil, nil, err
	}
	for i, s := range b.specs {
		if s.input < 0 {
			return nil, nil, fmt.Errorf("netexchange: channel %d of %s has input %d", i, b.key, s.input)
		}
	}
	ep := b.ep
	g := &Gate{
		key:     b.key,
		credits: b.credits,
		// Room for every credit of every channel, and the failure.
		inbox: make(chan exchange.Buffer, b.credits*len(b.specs)+1),
		chans: make([]gateChan, len(b.specs)),
		done:  make(chan struct{}),
	}
	senders := make([]exchange.Sender, len(b.specs))
	for i, s := range b.specs {
		if s.codec == nil {
			lc := &localChan{g: g, index: i, input: s.input, credits: make(chan struct{}, b.credits)}
			for range b.credits {
				lc.credits <- struct{}{}
			}
			g.chans[i].local = lc
			senders[i] = lc
			continue
		}
		g.chans[i].remote = &remoteChan{g: g, index: i, input: s.input, codec: s.codec}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.mu.closed {
		return nil, nil, fmt.Errorf("%w: building %s", ErrClosed, b.key)
	}
	if ep.mu.gates[b.key] != nil {
		return nil, nil, fmt.Errorf("netexchange: %s already exists on %s", b.key, ep.addr)
	}
	ep.mu.gates[b.key] = g
	g.ep = ep
	for _, p := range ep.mu.parked[b.key] {
		p.timer.Stop()
		ep.bindLocked(g, p.s, p.id, p.channel)
	}
	delete(ep.mu.parked, b.key)
	return g, senders, nil
}

// Gate is the inbox of one receiving subtask: it delivers the buffers of
// all its channels, local and remote, in per-channel order, with
// Buffer.Channel and Buffer.Input set. If a remote channel fails (its
// connection breaks, its sender abandons it, its data is corrupt), the
// gate delivers one buffer with Err set and reports it by Done and Err.
type Gate struct {
	ep      *Endpoint
	key     GateKey
	credits int
	inbox   chan exchange.Buffer
	chans   []gateChan
	// closed is guarded by ep.mu.
	closed bool

	failOnce sync.Once
	done     chan struct{}
	err      error // set before done is closed
	// received counts the bytes of the batches received on its remote
	// channels.
	received atomic.Int64
}

type gateChan struct {
	local  *localChan
	remote *remoteChan
}

// BytesReceived is the number of bytes of the batches received so far on
// the gate's remote channels, as encoded (framing and events not counted):
// Flink's numBytesIn from remote channels. Local channels carry records,
// not bytes.
func (g *Gate) BytesReceived() int64 { return g.received.Load() }

// C implements exchange.Inbox.
func (g *Gate) C() <-chan exchange.Buffer { return g.inbox }

// Key is the gate's key.
func (g *Gate) Key() GateKey { return g.key }

// Done is closed when the gate fails or is closed.
func (g *Gate) Done() <-chan struct{} { return g.done }

// Err is the gate's failure once Done is closed, nil before.
func (g *Gate) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// Close unregisters the gate; remote senders still sending to it are
// refused with ErrGateClosed. The receiving task calls it when it ends.
func (g *Gate) Close() {
	ep := g.ep
	ep.mu.Lock()
	if g.closed {
		ep.mu.Unlock()
		return
	}
	g.closed = true
	if ep.mu.gates[g.key] == g {
		delete(ep.mu.gates, g.key)
	}
	for _, c := range g.chans {
		if rc := c.remote; rc != nil && rc.s != nil {
			rc.s.refuse(rc.id, refuseGateClosed, fmt.Sprintf("%s is closed", g.key))
		}
	}
	ep.mu.Unlock()
	g.fail(fmt.Errorf("%w: %s", ErrClosed, g.key))
}

// fail makes the gate deliver err once.
func (g *Gate) fail(err error) {
	g.failOnce.Do(func() {
		g.err = err
		close(g.done)
		// Never blocks: the inbox keeps a place for the failure.
		g.inbox <- exchange.Buffer{Err: err}
	})
}

// localChan is a channel whose sender is in this process: buffers pass by
// reference, credits are a local semaphore.
type localChan struct {
	g       *Gate
	index   int
	input   int
	credits chan struct{}
}

// Send implements exchange.Sender.
func (c *localChan) Send(ctx context.Context, b exchange.Buffer) error {
	select {
	case <-c.credits:
	default:
		select {
		case <-c.credits:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.enqueue(b)
	return nil
}

// TrySend implements exchange.Sender.
func (c *localChan) TrySend(b exchange.Buffer) bool {
	select {
	case <-c.credits:
		c.enqueue(b)
		return true
	default:
		return false
	}
}

func (c *localChan) enqueue(b exchange.Buffer) {
	b.Channel, b.Input = c.index, c.input
	b.SetCreditReturner(c)
	c.g.inbox <- b // never blocks: room for every credit
}

// ReturnCredit implements exchange.CreditReturner.
func (c *localChan) ReturnCredit() { c.credits <- struct{}{} }

// remoteChan is a channel whose sender is in another process.
type remoteChan struct {
	g     *Gate
	index int
	input int
	codec task.BatchCodec
	// inflight counts the buffers delivered and not yet released.
	inflight atomic.Int32
	// s and id are set once (under ep.mu) when the sender's open is bound,
	// before any of its buffers arrives.
	s  *session
	id uint32
}

// deliver decodes a data or event frame into the inbox. It runs on the
// session's reader.
func (rc *remoteChan) deliver(f *frame) error {
	if n := rc.inflight.Add(1); int(n) > rc.g.credits {
		return fmt.Errorf("%w: channel %d of %s has %d buffers in flight, beyond its %d credits", ErrProtocol, rc.index, rc.g.key, n, rc.g.credits)
	}
	b := exchange.Buffer{Channel: rc.index, Input: rc.input}
	if f.typ == frameData {
		data, err := rc.codec.DecodeBatch(f.payload)
		if err != nil {
			rc.inflight.Add(-1)
			err = fmt.Errorf("%w: %w", ErrCorruptData, err)
			rc.s.ep.log.Error("netexchange: undecodable batch", "peer", rc.s.peer, "gate", rc.g.key.String(), "channel", rc.index, "err", err)
			rc.s.refuse(rc.id, refuseCorrupt, err.Error())
			rc.g.fail(&ChannelError{Key: rc.g.key, Channel: rc.index, Peer: rc.s.peer, Err: err})
			return nil
		}
		b.Data = data
		rc.g.received.Add(int64(len(f.payload)))
	} else {
		b.Event = f.event
		if f.event.Kind == exchange.EndOfPartition {
			rc.s.forget(rc.id, rc) // no more credits for it
		}
	}
	b.SetCreditReturner(rc)
	select {
	case rc.g.inbox <- b:
		return nil
	default: // cannot happen while credits are counted
		return fmt.Errorf("%w: the inbox of %s is full", ErrProtocol, rc.g.key)
	}
}

// ReturnCredit implements exchange.CreditReturner: the sender gets the
// credit back over the network.
func (rc *remoteChan) ReturnCredit() {
	rc.inflight.Add(-1)
	rc.s.grant(rc.id, rc)
}
