package kerberos

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/krberror"
)

// Kinds of Kerberos failure. Every error of this package is an *Error whose
// Kind is one of these, so errors.Is(err, kerberos.ErrClockSkew) works.
var (
	// ErrConfig: krb5.conf is missing, unreadable or invalid, or the login
	// configuration is incomplete.
	ErrConfig = errors.New("kerberos: configuration error")
	// ErrKeytab: the keytab is missing, unreadable, not a keytab, or holds no
	// key for the principal.
	ErrKeytab = errors.New("kerberos: keytab unusable")
	// ErrTicketCache: the ticket cache is missing, unreadable, of an
	// unsupported type, or holds no TGT.
	ErrTicketCache = errors.New("kerberos: ticket cache unusable")
	// ErrWrongPrincipal: the KDC does not know the client principal.
	ErrWrongPrincipal = errors.New("kerberos: client principal unknown to the KDC")
	// ErrBadCredentials: the KDC refused the key (pre-authentication failed,
	// or the keytab's key is outdated).
	ErrBadCredentials = errors.New("kerberos: credentials refused")
	// ErrClockSkew: this host's clock and the KDC's or server's differ by
	// more than the allowed skew.
	ErrClockSkew = errors.New("kerberos: clock skew too great")
	// ErrUnknownRealm: krb5.conf names no KDC for the realm.
	ErrUnknownRealm = errors.New("kerberos: unknown realm")
	// ErrKDCUnreachable: no KDC of the realm answered.
	ErrKDCUnreachable = errors.New("kerberos: KDC unreachable")
	// ErrTicketExpired: the TGT (or a service ticket) has expired and could
	// not be renewed.
	ErrTicketExpired = errors.New("kerberos: ticket expired")
	// ErrServerPrincipal: the service principal is unknown to the KDC, or
	// the server holding the connection is not the principal expected.
	ErrServerPrincipal = errors.New("kerberos: server principal mismatch")
	// ErrRejected: a server refused the Kerberos authentication without
	// saying why (Hadoop servers answer "GSS initiate failed"; the reason is
	// in the server's log).
	ErrRejected = errors.New("kerberos: authentication rejected by the server")
	// ErrKDC: any other error answered by the KDC.
	ErrKDC = errors.New("kerberos: KDC error")
	// ErrClosed: the Login was closed.
	ErrClosed = errors.New("kerberos: login closed")
)

// Error is a Kerberos failure: what was attempted, for which principal, what
// the KDC answered (Code, when it did), and what to check.
type Error struct {
	// Kind is one of the package's sentinels.
	Kind error
	// Op is what was attempted, e.g. "login from keytab".
	Op string
	// Principal is the client principal, SPN the service principal, Path the
	// file involved, when relevant.
	Principal, SPN, Path string
	// Code is the Kerberos error code from the KDC or server (RFC 4120
	// section 7.5.9), 0 if none.
	Code int32
	// Hint says what to check.
	Hint string
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("kerberos: ")
	b.WriteString(e.Op)
	if e.Principal != "" {
		b.WriteString(" as ")
		b.WriteString(e.Principal)
	}
	if e.SPN != "" {
		b.WriteString(" for ")
		b.WriteString(e.SPN)
	}
	if e.Path != "" {
		b.WriteString(" (")
		b.WriteString(e.Path)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Kind.Error(), "kerberos: "))
	if e.Code != 0 {
		fmt.Fprintf(&b, " (Kerberos error %d)", e.Code)
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Retryable reports whether a failure may go away by itself (an unreachable
// KDC, a KDC error that is not about the credentials), so that re-login is
// retried rather than reported as final.
func Retryable(err error) bool {
	return errors.Is(err, ErrKDCUnreachable) || errors.Is(err, ErrKDC)
}

// hints say what to check for each kind. They are completed with the
// principal, realm or path where the error has them.
var hints = map[error]string{
	ErrWrongPrincipal:  "check security.kerberos.login.principal (spelling, realm, case) against the principals of the KDC",
	ErrBadCredentials:  "the keytab's key does not match the KDC's: regenerate the keytab (a password change or a newer key version invalidates it) or check the principal",
	ErrClockSkew:       "synchronise this host's clock (NTP) with the KDC's and the servers'; Kerberos allows 5 minutes by default",
	ErrUnknownRealm:    "add the realm with its kdc to the [realms] section of krb5.conf (security.kerberos.krb5-conf.path or $KRB5_CONFIG), or fix the principal's realm",
	ErrKDCUnreachable:  "check that the realm's kdc entries in krb5.conf are right and that the KDC is up and reachable",
	ErrTicketExpired:   "log in from a keytab (security.kerberos.login.keytab) so tickets are renewed, or run kinit again for a ticket cache",
	ErrServerPrincipal: "check the server principal setting (e.g. dfs.namenode.kerberos.principal, yarn.resourcemanager.principal with _HOST) and that the server's host name resolves to the name in its principal",
	ErrKeytab:          "check security.kerberos.login.keytab: the file must exist, be readable by this user, and hold a key of the principal",
	ErrTicketCache:     "run kinit, or point KRB5CCNAME at a FILE: ticket cache readable by this user",
	ErrRejected: "the server's log names the reason; the usual ones: this host's clock differs from the server's by more than 5 minutes (synchronise with NTP), " +
		"the server's keytab does not hold the key the ticket was issued for (outdated keytab, or the server principal setting names another principal), or the ticket expired",
}

// kdcCode matches the code gokrb5 renders into its errors for a KRB-ERROR
// ("KRB Error: (37) KRB_AP_ERR_SKEW ...") and the code Java's GSS-API
// renders into a server's SASL failure ("... Clock skew too great (37)").
// gokrb5 flattens the KRBError it received into text (krberror.Errorf), so
// the code is recovered here, at the boundary, and nowhere else.
var (
	gokrbCode = regexp.MustCompile(`KRB Error: \((\d+)\)`)
	javaCode  = regexp.MustCompile(`Mechanism level: [^()]*\((\d+)\)`)
)

// KDCErrorCode extracts the Kerberos error code carried by err's text, as
// rendered by gokrb5 (a KRB-ERROR from the KDC) or by a Java GSS-API
// exception from a server, and 0 if it carries none.
func KDCErrorCode(err error) int32 {
	if err == nil {
		return 0
	}
	s := err.Error()
	if m := gokrbCode.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return int32(n)
	}
	if m := javaCode.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return int32(n)
	}
	return 0
}

// KindOfCode maps a Kerberos error code to the package's kind of error.
func KindOfCode(code int32) error {
	switch code {
	case errorcode.KDC_ERR_C_PRINCIPAL_UNKNOWN, errorcode.KDC_ERR_CLIENT_REVOKED:
		return ErrWrongPrincipal
	case errorcode.KDC_ERR_PREAUTH_FAILED, errorcode.KRB_AP_ERR_BAD_INTEGRITY, errorcode.KDC_ERR_KEY_EXPIRED, errorcode.KDC_ERR_ETYPE_NOSUPP:
		return ErrBadCredentials
	case errorcode.KRB_AP_ERR_SKEW:
		return ErrClockSkew
	case errorcode.KDC_ERR_WRONG_REALM:
		return ErrUnknownRealm
	case errorcode.KRB_AP_ERR_TKT_EXPIRED, errorcode.KDC_ERR_TGT_REVOKED, errorcode.KDC_ERR_NEVER_VALID:
		return ErrTicketExpired
	case errorcode.KDC_ERR_S_PRINCIPAL_UNKNOWN, errorcode.KRB_AP_ERR_NOT_US, errorcode.KRB_AP_ERR_BADMATCH,
		errorcode.KRB_AP_ERR_MODIFIED, errorcode.KRB_AP_ERR_BADKEYVER, errorcode.KRB_AP_ERR_NOKEY:
		return ErrServerPrincipal
	case 0:
		return nil
	}
	return ErrKDC
}

// classify turns an error from gokrb5 into an *Error: with a KDC error code,
// by the code; otherwise as unreachable if it was a network failure, or
// fallback.
func classify(err error, op, principal, spn string, fallback error) *Error {
	var ke *Error
	if errors.As(err, &ke) {
		return ke
	}
	e := &Error{Op: op, Principal: principal, SPN: spn, Err: err}
	var kerr krberror.Krberror
	isKrb := errors.As(err, &kerr)
	switch code := KDCErrorCode(err); {
	case code != 0:
		e.Code = code
		e.Kind = KindOfCode(code)
	case isKrb && kerr.RootCause == krberror.NetworkingError, isNetworkFailure(err):
		e.Kind = ErrKDCUnreachable
	case isKrb && kerr.RootCause == krberror.DecryptingError && strings.HasPrefix(op, "login"):
		// The KDC answered but our key does not open its reply: the keytab's key is not the
		// principal's current one.
		e.Kind = ErrBadCredentials
	default:
		e.Kind = fallback
	}
	e.Hint = hints[e.Kind]
	return e
}

// isNetworkFailure recognises gokrb5's "could not reach any KDC" errors
// that reach us without a Krberror around them, built as plain text around
// the dial errors.
func isNetworkFailure(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Networking_Error") || strings.Contains(s, "communication error with KDC") ||
		strings.Contains(s, "failed to communicate with KDC")
}

func newError(kind error, op, principal, path string, cause error, hint string) *Error {
	if hint == "" {
		hint = hints[kind]
	}
	return &Error{Kind: kind, Op: op, Principal: principal, Path: path, Hint: hint, Err: cause}
}
