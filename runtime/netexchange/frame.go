package netexchange

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice/sluice/internal/runtime/exchange"
)

// The frames of a stream (netpb.Message.frames), version 2 (the frames of
// version 1; the hello may now refuse a superseded stream). Integers are
// unsigned LEB128 varints (uvarint) or zig-zag varints (varint); strings
// and payloads are a uvarint length and the bytes. A channel id is chosen
// by the channel's sender, starts at 1 and grows by one per channel the
// sender opens on the stream; the sender's frames name its own ids and the
// receiver's frames (credit, refuse) name the same ids.
//
//	open    1 id scope:string chain subtask channel  sender opens a channel of a gate
//	data    2 id payload:string                       a batch (task.BatchCodec encoding)
//	event   3 id kind:byte [args]                     a control event
//	close   4 id                                      sender abandons the channel
//	credit  5 id n                                    receiver grants n more buffers
//	refuse  6 id code:byte reason:string              receiver refuses or ends a channel
//
// Event kinds: 1 watermark (varint watermark), 2 idle, 3 active, 4 end of
// partition, 5 barrier (varint checkpoint id, uvarint options). Every data
// and event frame spends one credit.
const frameVersion = 2

type frameType byte

const (
	frameOpen frameType = iota + 1
	frameData
	frameEvent
	frameClose
	frameCredit
	frameRefuse
)

func (t frameType) String() string {
	switch t {
	case frameOpen:
		return "open"
	case frameData:
		return "data"
	case frameEvent:
		return "event"
	case frameClose:
		return "close"
	case frameCredit:
		return "credit"
	case frameRefuse:
		return "refuse"
	}
	return fmt.Sprintf("type-%d", byte(t))
}

// Wire event kinds, independent of exchange's constants.
const (
	wireWatermark byte = iota + 1
	wireIdle
	wireActive
	wireEndOfPartition
	wireBarrier
)

// refuseCode says why a receiver refuses or ends a channel.
type refuseCode byte

const (
	refuseUnknownGate refuseCode = iota + 1
	refuseUnknownChannel
	refuseGateClosed
	refuseCorrupt
)

// Limits of what a frame may announce.
const (
	maxScopeBytes  = 4096
	maxReasonBytes = 4096
)

// frame is one decoded frame. Payload aliases the decoded bytes.
type frame struct {
	typ     frameType
	id      uint32
	key     GateKey // open
	channel int     // open
	payload []byte  // data
	event   exchange.Event
	credits int        // credit
	code    refuseCode // refuse
	reason  string     // refuse
}

func appendOpen(b []byte, id uint32, key GateKey, channel int) []byte {
	b = append(b, byte(frameOpen))
	b = binary.AppendUvarint(b, uint64(id))
	b = appendString(b, key.Scope)
	b = binary.AppendUvarint(b, uint64(key.Chain))
	b = binary.AppendUvarint(b, uint64(key.Subtask))
	return binary.AppendUvarint(b, uint64(channel))
}

func appendData(b []byte, id uint32, payload []byte) []byte {
	b = append(b, byte(frameData))
	b = binary.AppendUvarint(b, uint64(id))
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// dataOverhead bounds the bytes a data frame adds to its payload.
const dataOverhead = 1 + 2*binary.MaxVarintLen64

func appendEvent(b []byte, id uint32, ev exchange.Event) []byte {
	b = append(b, byte(frameEvent))
	b = binary.AppendUvarint(b, uint64(id))
	switch ev.Kind {
	case exchange.Watermark:
		b = append(b, wireWatermark)
		b = binary.AppendVarint(b, ev.Watermark)
	case exchange.Idle:
		b = append(b, wireIdle)
	case exchange.Active:
		b = append(b, wireActive)
	case exchange.EndOfPartition:
		b = append(b, wireEndOfPartition)
	case exchange.Barrier:
		b = append(b, wireBarrier)
		b = binary.AppendVarint(b, ev.CheckpointID)
		b = binary.AppendUvarint(b, uint64(ev.Options))
	default:
		panic(fmt.Sprintf("netexchange: encoding event kind %d", ev.Kind)) // checked by the sender
	}
	return b
}

func appendClose(b []byte, id uint32) []byte {
	b = append(b, byte(frameClose))
	return binary.AppendUvarint(b, uint64(id))
}

func appendCredit(b []byte, id uint32, n int) []byte {
	b = append(b, byte(frameCredit))
	b = binary.AppendUvarint(b, uint64(id))
	return binary.AppendUvarint(b, uint64(n))
}

func appendRefuse(b []byte, id uint32, code refuseCode, reason string) []byte {
	if len(reason) > maxReasonBytes {
		reason = reason[:maxReasonBytes]
	}
	b = append(b, byte(frameRefuse))
	b = binary.AppendUvarint(b, uint64(id))
	b = append(b, byte(code))
	return appendString(b, reason)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendFrame appends any frame (the hot paths call the typed appenders).
func appendFrame(b []byte, f *frame) []byte {
	switch f.typ {
	case frameOpen:
		return appendOpen(b, f.id, f.key, f.channel)
	case frameData:
		return appendData(b, f.id, f.payload)
	case frameEvent:
		return appendEvent(b, f.id, f.event)
	case frameClose:
		return appendClose(b, f.id)
	case frameCredit:
		return appendCredit(b, f.id, f.credits)
	case frameRefuse:
		return appendRefuse(b, f.id, f.code, f.reason)
	}
	panic(fmt.Sprintf("netexchange: encoding frame type %d", f.typ))
}

// frameReader decodes the frames of one message.
type frameReader struct {
	b   []byte
	off int
	// start is the offset of the frame being decoded, typ its type.
	start int
	typ   frameType
}

// next decodes the next frame into f; ok is false at the end of the data.
// A malformed frame is an error wrapping ErrMalformedFrame that names the
// frame type, its offset and what is wrong.
func (r *frameReader) next(f *frame) (ok bool, err error) {
	if r.off >= len(r.b) {
		return false, nil
	}
	r.start, r.typ = r.off, frameType(r.b[r.off])
	r.off++
	*f = frame{typ: r.typ}
	if r.typ < frameOpen || r.typ > frameRefuse {
		return false, r.errorf("unknown frame type")
	}
	if f.id, err = r.id(); err != nil {
		return false, err
	}
	switch r.typ {
	case frameOpen:
		scope, err := r.bytes("scope", maxScopeBytes)
		if err != nil {
			return false, err
		}
		f.key.Scope = string(scope)
		if f.key.Chain, err = r.int("chain"); err != nil {
			return false, err
		}
		if f.key.Subtask, err = r.int("subtask"); err != nil {
			return false, err
		}
		if f.channel, err = r.int("channel"); err != nil {
			return false, err
		}
	case frameData:
		if f.payload, err = r.bytes("payload", math.MaxInt); err != nil {
			return false, err
		}
	case frameEvent:
		if err := r.event(&f.event); err != nil {
			return false, err
		}
	case frameClose:
	case frameCredit:
		n, err := r.int("credits")
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, r.errorf("zero credits")
		}
		f.credits = n
	case frameRefuse:
		c, err := r.byte("refusal code")
		if err != nil {
			return false, err
		}
		f.code = refuseCode(c)
		if f.code < refuseUnknownGate || f.code > refuseCorrupt {
			return false, r.errorf("unknown refusal code %d", c)
		}
		reason, err := r.bytes("reason", maxReasonBytes)
		if err != nil {
			return false, err
		}
		f.reason = string(reason)
	}
	return true, nil
}

func (r *frameReader) event(ev *exchange.Event) error {
	k, err := r.byte("event kind")
	if err != nil {
		return err
	}
	switch k {
	case wireWatermark:
		ev.Kind = exchange.Watermark
		wm, err := r.varint("watermark")
		if err != nil {
			return err
		}
		ev.Watermark = wm
	case wireIdle:
		ev.Kind = exchange.Idle
	case wireActive:
		ev.Kind = exchange.Active
	case wireEndOfPartition:
		ev.Kind = exchange.EndOfPartition
	case wireBarrier:
		ev.Kind = exchange.Barrier
		id, err := r.varint("checkpoint id")
		if err != nil {
			return err
		}
		opts, err := r.uvarint("barrier options")
		if err != nil {
			return err
		}
		if opts > math.MaxUint32 {
			return r.errorf("barrier options %d overflow 32 bits", opts)
		}
		ev.CheckpointID, ev.Options = id, uint32(opts)
	default:
		return r.errorf("unknown event kind %d", k)
	}
	return nil
}

func (r *frameReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s frame at byte %d: %s", ErrMalformedFrame, r.typ, r.start, fmt.Sprintf(format, args...))
}

func (r *frameReader) byte(what string) (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.errorf("truncated before the %s", what)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *frameReader) uvarint(what string) (uint64, error) {
	x, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, r.errorf("bad or truncated %s", what)
	}
	r.off += n
	return x, nil
}

func (r *frameReader) varint(what string) (int64, error) {
	x, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		return 0, r.errorf("bad or truncated %s", what)
	}
	r.off += n
	return x, nil
}

func (r *frameReader) id() (uint32, error) {
	x, err := r.uvarint("channel id")
	if err != nil {
		return 0, err
	}
	if x == 0 || x > math.MaxUint32 {
		return 0, r.errorf("channel id %d out of range", x)
	}
	return uint32(x), nil
}

func (r *frameReader) int(what string) (int, error) {
	x, err := r.uvarint(what)
	if err != nil {
		return 0, err
	}
	if x > math.MaxInt32 {
		return 0, r.errorf("%s %d out of range", what, x)
	}
	return int(x), nil
}

func (r *frameReader) bytes(what string, limit int) ([]byte, error) {
	n, err := r.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, r.errorf("%s of %d bytes exceeds the limit of %d", what, n, limit)
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, r.errorf("%s of %d bytes truncated at %d", what, n, len(r.b)-r.off)
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}
