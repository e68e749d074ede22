package netexchange

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/internal/runtime/exchange"
)

var (
	// ErrClosed is wrapped by the errors of an endpoint or gate that was
	// closed; it wraps exchange.ErrClosed.
	ErrClosed = fmt.Errorf("netexchange: closed: %w", exchange.ErrClosed)
	// ErrConnectionLost is wrapped by the errors of every sender and gate
	// using a connection that broke (or could not be made).
	ErrConnectionLost = errors.New("netexchange: connection lost")
	// ErrProtocol is wrapped when a peer broke the protocol (a frame for a
	// channel it never opened, more buffers than credits, another
	// version); the connection is closed.
	ErrProtocol = errors.New("netexchange: protocol violation")
	// ErrMalformedFrame is wrapped (with ErrProtocol) by the errors about a
	// frame that does not decode.
	ErrMalformedFrame = fmt.Errorf("%w: malformed frame", ErrProtocol)
	// ErrUnknownGate is wrapped when a channel was opened for a gate the
	// receiving endpoint does not have within Config.OpenTimeout.
	ErrUnknownGate = errors.New("netexchange: unknown gate")
	// ErrUnknownChannel is wrapped when a channel was opened with an index
	// the gate does not have, or that is local or already open.
	ErrUnknownChannel = errors.New("netexchange: unknown channel")
	// ErrGateClosed is wrapped when the receiving gate was closed while its
	// sender was still sending.
	ErrGateClosed = errors.New("netexchange: receiving gate closed")
	// ErrCorruptData is wrapped when a receiver could not decode a batch.
	ErrCorruptData = errors.New("netexchange: corrupt data")
	// ErrSenderClosed is wrapped when a sender abandoned its channel before
	// its end of partition.
	ErrSenderClosed = errors.New("netexchange: sender closed the channel before its end of partition")
)

// PeerError is the failure of the connection to a peer: every sender and
// gate using it fails with it. Err wraps ErrConnectionLost, ErrProtocol or
// ErrClosed, and the cause.
type PeerError struct {
	// Peer is the peer's data address.
	Peer string
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("peer %s: %v", e.Peer, e.Err) }

// Unwrap returns the wrapped error.
func (e *PeerError) Unwrap() error { return e.Err }

// ChannelError is the failure of one channel. Err wraps a PeerError or one
// of ErrUnknownGate, ErrUnknownChannel, ErrGateClosed, ErrCorruptData,
// ErrSenderClosed, ErrClosed.
type ChannelError struct {
	Key     GateKey
	Channel int
	// Peer is the data address of the other end.
	Peer string
	Err  error
}

func (e *ChannelError) Error() string {
	return fmt.Sprintf("netexchange: channel %d of %s (peer %s): %v", e.Channel, e.Key, e.Peer, e.Err)
}

// Unwrap returns the wrapped error.
func (e *ChannelError) Unwrap() error { return e.Err }

func refusalError(code refuseCode, reason string) error {
	var base error
	switch code {
	case refuseUnknownGate:
		base = ErrUnknownGate
	case refuseUnknownChannel:
		base = ErrUnknownChannel
	case refuseGateClosed:
		base = ErrGateClosed
	default:
		base = ErrCorruptData
	}
	if reason == "" {
		return base
	}
	return fmt.Errorf("%w: %s", base, reason)
}
