package hadoop

import (
	"fmt"
	"strings"
)

// ExceptionClass names a Java exception class a Hadoop server may raise. It
// is an error value meant for errors.Is: errors.Is(err, ErrStandby) is true
// when err is (or wraps) a *RemoteError of that class or of a known subclass.
//
// Packages that speak to Hadoop define their own classes the same way, e.g.
// yarn.ErrApplicationNotFound.
type ExceptionClass string

// Error returns the class name.
func (c ExceptionClass) Error() string { return "hadoop: remote " + c.Short() }

// Short is the class name without its Java package.
func (c ExceptionClass) Short() string {
	s := string(c)
	if i := strings.LastIndexAny(s, ".$"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Exception classes of Hadoop common that Sluice acts on.
const (
	ErrAccessControl  ExceptionClass = "org.apache.hadoop.security.AccessControlException"
	ErrAuthorization  ExceptionClass = "org.apache.hadoop.security.authorize.AuthorizationException"
	ErrStandby        ExceptionClass = "org.apache.hadoop.ipc.StandbyException"
	ErrRetriable      ExceptionClass = "org.apache.hadoop.ipc.RetriableException"
	ErrInvalidToken   ExceptionClass = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	ErrSasl           ExceptionClass = "javax.security.sasl.SaslException"
	ErrNoSuchMethod   ExceptionClass = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	ErrNoSuchProtocol ExceptionClass = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	ErrRPCServer      ExceptionClass = "org.apache.hadoop.ipc.RpcServerException"
	ErrIO             ExceptionClass = "java.io.IOException"
)

// superclassesOf lists, for exception classes whose parents Sluice matches
// on, the classes errors.Is should also accept. Only relations Sluice relies
// on are listed; it is not a model of Java's class hierarchy.
func superclassesOf(class string) []ExceptionClass {
	switch ExceptionClass(class) {
	case ErrAuthorization:
		return []ExceptionClass{ErrAccessControl}
	case ErrInvalidToken:
		return []ExceptionClass{ErrIO}
	}
	return nil
}

// RemoteError is an exception raised by a Hadoop server and carried back in
// an RPC response header.
type RemoteError struct {
	// Class is the fully qualified Java exception class.
	Class string
	// Message is the exception message (servers may append a stack trace).
	Message string
	// Code is Hadoop's RPC error code name (e.g. ERROR_APPLICATION,
	// FATAL_UNAUTHORIZED), empty if the server sent none.
	Code string
	// Fatal is set when the server closed the connection after the error.
	Fatal bool
	// Method is the RPC method that failed ("" for connection set-up).
	Method string
}

// Error renders the short class name and the first line of the message.
func (e *RemoteError) Error() string {
	msg := e.Message
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	cls := ExceptionClass(e.Class).Short()
	var b strings.Builder
	b.WriteString("hadoop: ")
	if e.Method != "" {
		fmt.Fprintf(&b, "%s: ", e.Method)
	}
	b.WriteString("remote ")
	b.WriteString(cls)
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.Fatal {
		b.WriteString(" (connection closed)")
	}
	return b.String()
}

// Is matches ExceptionClass targets (by class, or a listed superclass) and
// *RemoteError targets with the same class.
func (e *RemoteError) Is(target error) bool {
	switch t := target.(type) {
	case ExceptionClass:
		if e.Class == string(t) {
			return true
		}
		for _, s := range superclassesOf(e.Class) {
			if s == t {
				return true
			}
		}
	case *RemoteError:
		return t != nil && t.Class == e.Class
	}
	return false
}
