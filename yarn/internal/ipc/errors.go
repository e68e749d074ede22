package ipc

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/hadoop"
)

// Errors of the IPC layer. Remote exceptions are *hadoop.RemoteError.
var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("ipc: client closed")
	// ErrConnectionLost is wrapped when a connection broke while a call was
	// outstanding: the server may or may not have executed it.
	ErrConnectionLost = errors.New("ipc: connection lost")
	// ErrConnect is wrapped when no connection could be established.
	ErrConnect = errors.New("ipc: cannot connect")
	// ErrAuth is wrapped when the SASL exchange fails on our side (no common
	// mechanism, bad server proof, unsupported quality of protection).
	ErrAuth = errors.New("ipc: authentication failed")
	// ErrKerberosNotConfigured is returned when only Kerberos could
	// authenticate a connection and the client has no Kerberos login.
	ErrKerberosNotConfigured = errors.New("ipc: the server requires Kerberos and the client has no Kerberos login (security.kerberos.login.keytab/principal, or a ticket cache)")
	// ErrFallbackToSimple is wrapped (by a *FallbackError) when a server asks
	// a client with a Kerberos login to continue with SIMPLE authentication
	// and the client does not allow it (Options.FallbackToSimpleAllowed).
	ErrFallbackToSimple = errors.New("ipc: server asks to fall back to SIMPLE authentication")
)

// FallbackError reports that the server at Addr asked a client with a
// Kerberos login to fall back to SIMPLE authentication, which the client
// refused, as Hadoop's clients do unless
// ipc.client.fallback-to-simple-auth-allowed is true: a server with security
// off asks this, and so does one impersonating a secure server to receive
// calls without authenticating itself. It unwraps to ErrAuth (an
// authentication failure, not retried) and ErrFallbackToSimple.
type FallbackError struct {
	// Addr is the server's host:port.
	Addr string
	// How says how the server asked: "answered NEGOTIATE with SUCCESS" or
	// "offered SIMPLE, ...".
	How string
}

func (e *FallbackError) Error() string {
	return fmt.Sprintf("ipc: the server at %s asks to fall back to SIMPLE authentication (it %s), but this client has a Kerberos login and only allows secure connections; "+
		"if %s runs with security off, set %s=true in the Hadoop configuration", e.Addr, e.How, e.Addr, hadoop.KeyFallbackToSimpleAuthAllowed)
}

func (e *FallbackError) Unwrap() []error { return []error{ErrAuth, ErrFallbackToSimple} }

// staleError reports that a call found its connection already dead before
// sending anything; Call retries it on a fresh connection. It unwraps to the
// reason the connection died.
type staleError struct{ cause error }

func (e *staleError) Error() string { return e.cause.Error() }
func (e *staleError) Unwrap() error { return e.cause }

// ConnectError reports a failure to connect to Addr after Attempts tries.
type ConnectError struct {
	Addr     string
	Attempts int
	Err      error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("ipc: cannot connect to %s after %d attempt(s): %v", e.Addr, e.Attempts, e.Err)
}

func (e *ConnectError) Unwrap() []error { return []error{ErrConnect, e.Err} }
