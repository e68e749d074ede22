package netexchange

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluice/sluice/internal/runtime/exchange"
	"github.com/sluice/sluice/internal/runtime/task"
)

// Sender is the sending end of a remote channel; it implements
// exchange.Sender. It holds the credits the receiving gate granted: Send
// waits for one, encodes the buffer (a batch with the channel's codec, or
// an event) and queues it on the connection, in order. Send and TrySend
// are called by one goroutine at a time (the sending task).
type Sender struct {
	s       *session
	id      uint32
	key     GateKey
	channel int
	peer    string
	codec   task.BatchCodec
	wake    chan struct{}
	// scratch is the reused encoding buffer (the sending goroutine's).
	scratch []byte
	// sent counts the bytes of the batches sent (encoded).
	sent atomic.Int64

	mu struct {
		sync.Mutex
		credits int
		err     error
	}
}

var _ exchange.Sender = (*Sender)(nil)

// Send implements exchange.Sender: it blocks until the receiver has
// granted a credit. It fails with the context's error, or a *ChannelError
// once the channel failed (its connection broke, the receiver refused it).
func (x *Sender) Send(ctx context.Context, b exchange.Buffer) error {
	for {
		ok, err := x.take()
		if err != nil {
			return err
		}
		if ok {
			return x.write(b)
		}
		select {
		case <-x.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TrySend implements exchange.Sender: it sends b if a credit is at hand.
// It returns false on a failed channel; Send then reports the failure.
func (x *Sender) TrySend(b exchange.Buffer) bool {
	ok, err := x.take()
	if !ok || err != nil {
		return false
	}
	return x.write(b) == nil
}

// Credits is the number of credits the sender holds (for tests and
// metrics).
func (x *Sender) Credits() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.mu.credits
}

// Close abandons the channel: if it has not sent its end of partition, the
// receiving gate fails with ErrSenderClosed. Later sends fail.
func (x *Sender) Close() {
	x.s.closeSender(x)
	x.fail(x.errorf(ErrClosed))
}

func (x *Sender) take() (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.err != nil {
		return false, x.mu.err
	}
	if x.mu.credits > 0 {
		x.mu.credits--
		return true, nil
	}
	return false, nil
}

func (x *Sender) write(b exchange.Buffer) error {
	if b.Data == nil {
		switch b.Event.Kind {
		case exchange.Watermark, exchange.Idle, exchange.Active, exchange.EndOfPartition, exchange.Barrier:
		default:
			err := x.errorf(fmt.Errorf("netexchange: cannot send event kind %d", b.Event.Kind))
			x.fail(err)
			return err
		}
		err := x.s.sendEvent(x, b.Event)
		if err == nil && b.Event.Kind == exchange.EndOfPartition {
			x.fail(x.errorf(fmt.Errorf("%w: the channel has ended", ErrClosed)))
		}
		return x.sendErr(err)
	}
	x.scratch = x.codec.AppendBatch(x.scratch[:0], b.Data)
	x.codec.ReleaseBatch(b.Data)
	if n := len(x.scratch) + dataOverhead; n > x.s.ep.cfg.MaxMessageBytes {
		err := x.errorf(fmt.Errorf("netexchange: a batch of %d bytes exceeds the largest message of %d bytes", n, x.s.ep.cfg.MaxMessageBytes))
		x.fail(err)
		return err
	}
	if err := x.sendErr(x.s.sendData(x, x.scratch)); err != nil {
		return err
	}
	x.sent.Add(int64(len(x.scratch)))
	return nil
}

// BytesSent is the number of bytes of the batches sent so far, as encoded
// with the channel's codec (framing and events not counted): Flink's
// numBytesOut of a remote channel.
func (x *Sender) BytesSent() int64 { return x.sent.Load() }

// sendErr prefers the sender's own failure (a refusal) to the session's
// report that the sender is gone.
func (x *Sender) sendErr(err error) error {
	if err == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.err != nil {
		return x.mu.err
	}
	x.mu.err = err
	return err
}

func (x *Sender) addCredits(n int) {
	x.mu.Lock()
	x.mu.credits += n
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// fail records the sender's first failure and wakes a blocked Send.
func (x *Sender) fail(err error) {
	x.mu.Lock()
	if x.mu.err == nil {
		x.mu.err = err
	}
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

func (x *Sender) errorf(err error) error {
	return &ChannelError{Key: x.key, Channel: x.channel, Peer: x.peer, Err: err}
}
