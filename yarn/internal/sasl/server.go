package sasl

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
)

// DigestMD5Server is the server side of DIGEST-MD5 with qop=auth. Sluice
// uses it only in its own fake IPC server (ipctest) to exercise the client;
// it follows RFC 2831 as Hadoop's servers apply it.
type DigestMD5Server struct {
	Realm    string // e.g. "default"
	Protocol string // digest-uri service part, e.g. ""
	ServerID string // digest-uri host part, e.g. "default"
	// Password returns the password for a user name, false if unknown.
	Password func(username string) (string, bool)
	Rand     io.Reader

	nonce string
}

// Challenge returns the server's first challenge.
func (s *DigestMD5Server) Challenge() ([]byte, error) {
	var raw [18]byte
	if _, err := io.ReadFull(s.Rand, raw[:]); err != nil {
		return nil, err
	}
	s.nonce = base64.StdEncoding.EncodeToString(raw[:])
	return FormatDirectives([]Directive{
		{"realm", s.Realm},
		{"nonce", s.nonce},
		{"qop", QOPAuth},
		{"charset", "utf-8"},
		{"algorithm", "md5-sess"},
	}), nil
}

// Verify checks the client's response and returns the final message
// (rspauth) to send with SUCCESS, and the authenticated user name.
func (s *DigestMD5Server) Verify(response []byte) (final []byte, username string, err error) {
	dirs, err := ParseDirectives(response)
	if err != nil {
		return nil, "", err
	}
	m := map[string]string{}
	for _, d := range dirs {
		if _, dup := m[d.Key]; dup {
			return nil, "", fmt.Errorf("%w: response repeats %q", ErrProtocol, d.Key)
		}
		m[d.Key] = d.Value
	}
	for _, k := range []string{"username", "nonce", "cnonce", "nc", "digest-uri", "response"} {
		if m[k] == "" {
			return nil, "", fmt.Errorf("%w: response has no %s", ErrProtocol, k)
		}
	}
	if m["nonce"] != s.nonce {
		return nil, "", fmt.Errorf("%w: nonce mismatch", ErrAuthFailed)
	}
	if m["realm"] != s.Realm {
		return nil, "", fmt.Errorf("%w: realm %q, want %q", ErrAuthFailed, m["realm"], s.Realm)
	}
	if want := s.Protocol + "/" + s.ServerID; m["digest-uri"] != want {
		return nil, "", fmt.Errorf("%w: digest-uri %q, want %q", ErrAuthFailed, m["digest-uri"], want)
	}
	qop := m["qop"]
	if qop == "" {
		qop = QOPAuth
	}
	if qop != QOPAuth {
		return nil, "", fmt.Errorf("%w: qop %q not offered", ErrAuthFailed, qop)
	}
	pw, ok := s.Password(m["username"])
	if !ok {
		return nil, "", fmt.Errorf("%w: unknown user", ErrAuthFailed)
	}
	want := DigestResponse(m["username"], m["realm"], pw, m["nonce"], m["cnonce"], m["nc"], qop, m["digest-uri"], m["authzid"], true)
	if subtle.ConstantTimeCompare([]byte(want), []byte(m["response"])) != 1 {
		return nil, "", fmt.Errorf("%w: wrong response digest", ErrAuthFailed)
	}
	rsp := DigestResponse(m["username"], m["realm"], pw, m["nonce"], m["cnonce"], m["nc"], qop, m["digest-uri"], m["authzid"], false)
	return []byte("rspauth=" + rsp), m["username"], nil
}
