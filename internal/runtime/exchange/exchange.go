// Package exchange moves buffers between the subtasks of different chains.
//
// A buffer is a batch of records or a control event. Each receiving subtask
// has one Inbox; each (sender, receiver) pair is a channel with a fixed
// number of credits. A sender spends a credit per buffer and blocks when it
// has none; the receiver returns the credit once it has processed the
// buffer. Memory is therefore bounded by credits × channels, and a slow
// operator backpressures its upstream.
//
// The in-process implementation here is one of two: the distributed runtime
// implements the same Sender and Inbox over the network with credit-based
// flow control.
package exchange

import (
	"context"
	"errors"
)

// ErrClosed is returned when sending to or receiving from a torn-down exchange.
var ErrClosed = errors.New("exchange: closed")

// EventKind distinguishes control events.
type EventKind uint8

// Control events carried in order with the data.
const (
	// NoEvent marks a data buffer.
	NoEvent EventKind = iota
	// Watermark carries the sender's output watermark.
	Watermark
	// Idle says the sender has gone idle (no watermark progress expected).
	Idle
	// Active says the sender is active again.
	Active
	// EndOfPartition says the sender will send nothing more.
	EndOfPartition
	// Barrier carries a checkpoint barrier.
	Barrier
)

// Event is a control event.
type Event struct {
	Kind      EventKind
	Watermark int64
	// CheckpointID and Options belong to barriers.
	CheckpointID int64
	Options      uint32
}

// Buffer is the unit that travels on a channel.
type Buffer struct {
	// Channel is the index of the sending channel at the receiver (over all
	// of the receiver's inputs); Input is the receiver's logical input.
	Channel int
	Input   int
	// Data is a typed batch; nil for events.
	Data  any
	Event Event
	// Err, when set, reports that the exchange failed (a remote channel's
	// connection broke): the receiver fails with it. Such a buffer carries
	// neither data nor an event and needs no Release.
	Err error

	credit   chan struct{}
	returner CreditReturner
}

// CreditReturner takes back the credit of a released buffer for an exchange
// whose credits are not a local channel (the network exchange grants the
// remote sender a new credit).
type CreditReturner interface {
	// ReturnCredit is called once per released buffer and must not block.
	ReturnCredit()
}

// SetCreditReturner makes Release hand the buffer's credit to r.
func (b *Buffer) SetCreditReturner(r CreditReturner) { b.returner = r }

// Release returns the buffer's credit to its sender. The receiver calls it
// once it has processed the buffer.
func (b *Buffer) Release() {
	if b.credit != nil {
		b.credit <- struct{}{}
		b.credit = nil
	}
	if r := b.returner; r != nil {
		b.returner = nil
		r.ReturnCredit()
	}
}

// Sender sends buffers on one channel.
type Sender interface {
	// Send blocks until a credit is available, then enqueues b. It fails
	// with the context's error or ErrClosed.
	Send(ctx context.Context, b Buffer) error
	// TrySend enqueues b if a credit is available without blocking.
	TrySend(b Buffer) bool
}

// Inbox is the receiving end of all channels into one subtask.
type Inbox interface {
	// C delivers buffers in per-channel order.
	C() <-chan Buffer
}

// LocalInbox is an in-process inbox.
type LocalInbox struct{ ch chan Buffer }

// C implements Inbox.
func (in *LocalInbox) C() <-chan Buffer { return in.ch }

// LocalChannel is an in-process channel into a LocalInbox.
type LocalChannel struct {
	inbox   *LocalInbox
	credits chan struct{}
	channel int
	input   int
}

// Send implements Sender.
func (c *LocalChannel) Send(ctx context.Context, b Buffer) error {
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

// TrySend implements Sender.
func (c *LocalChannel) TrySend(b Buffer) bool {
	select {
	case <-c.credits:
		c.enqueue(b)
		return true
	default:
		return false
	}
}

func (c *LocalChannel) enqueue(b Buffer) {
	b.Channel, b.Input, b.credit = c.channel, c.input, c.credits
	// Never blocks: the inbox has room for every credit of every channel.
	c.inbox.ch <- b
}

// LocalGate builds the inbox of one receiving subtask and its channels.
type LocalGate struct {
	credits int
	specs   []chanSpec
}

type chanSpec struct{ input int }

// NewLocalGate returns a builder whose channels get the given credits each.
func NewLocalGate(credits int) *LocalGate {
	if credits < 1 {
		credits = 1
	}
	return &LocalGate{credits: credits}
}

// AddChannel declares the next channel (for the given logical input) and
// returns its index.
func (g *LocalGate) AddChannel(input int) int {
	g.specs = append(g.specs, chanSpec{input: input})
	return len(g.specs) - 1
}

// Build returns the inbox and the channels, indexed as declared.
func (g *LocalGate) Build() (*LocalInbox, []*LocalChannel) {
	in := &LocalInbox{ch: make(chan Buffer, g.credits*len(g.specs)+1)}
	chans := make([]*LocalChannel, len(g.specs))
	for i, s := range g.specs {
		cr := make(chan struct{}, g.credits)
		for j := 0; j < g.credits; j++ {
			cr <- struct{}{}
		}
		chans[i] = &LocalChannel{inbox: in, credits: cr, channel: i, input: s.input}
	}
	return in, chans
}
