package ipc

import (
	"errors"
	"fmt"
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
)

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
