// Package sasl implements the SASL mechanisms Hadoop IPC uses between a
// Sluice process and a Hadoop server: DIGEST-MD5 (RFC 2831) for token
// authentication and GSSAPI (RFC 4752, Kerberos V5 per RFC 4121) for
// Kerberos. The mechanisms are state machines over byte slices; the ipc
// package carries their tokens in RpcSaslProto messages.
//
// Both implement all three qualities of protection ("auth", "auth-int",
// "auth-conf": hadoop.rpc.protection authentication, integrity, privacy;
// DIGEST-MD5's confidentiality with the rc4 cipher); after integrity or
// privacy the mechanism's SecurityLayer wraps every RPC frame.
package sasl

import (
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ErrProtocol is wrapped by errors about malformed or unexpected SASL
// messages.
var ErrProtocol = errors.New("sasl: protocol error")

// ErrAuthFailed is wrapped when the server's proof of identity is wrong.
var ErrAuthFailed = errors.New("sasl: server authentication failed")

// ErrQOPUnsupported is wrapped when the server accepts no quality of
// protection the client can provide.
var ErrQOPUnsupported = errors.New("sasl: no supported quality of protection")

// Quality-of-protection names (RFC 2831 qop-value).
const (
	QOPAuth     = "auth"
	QOPAuthInt  = "auth-int"
	QOPAuthConf = "auth-conf"
)

// SecurityLayer wraps and unwraps RPC frames after a SASL exchange that
// negotiated integrity or privacy; with qop=auth there is no layer.
type SecurityLayer interface {
	Wrap(p []byte) ([]byte, error)
	Unwrap(p []byte) ([]byte, error)
	// MaxWrap is the largest plaintext one Wrap may take (the peer's
	// buffer less the wrapping).
	MaxWrap() int
}

// Layered is implemented by mechanisms that can negotiate a security layer.
type Layered interface {
	// SecurityLayer is the negotiated layer, nil for qop=auth.
	SecurityLayer() SecurityLayer
}

// Mechanism is a client-side SASL mechanism.
type Mechanism interface {
	// Name is the SASL mechanism name, e.g. "DIGEST-MD5".
	Name() string
	// Step consumes a server challenge (nil before the first one) and
	// returns the response to send. done is true once the exchange is
	// complete from the client's side.
	Step(challenge []byte) (response []byte, done bool, err error)
	// Complete reports whether the server has been authenticated.
	Complete() bool
	// QOP is the negotiated quality of protection (valid once Complete).
	QOP() string
}

// DigestMD5 is a DIGEST-MD5 client (RFC 2831) as Hadoop's token
// authentication uses it: the user name and password are the base64 token
// identifier and password; the digest-uri is protocol/serverID as offered by
// the server (for Hadoop token auth, "" and "default").
type DigestMD5 struct {
	username, password string
	protocol, serverID string
	authzid            string
	allowed            []string
	rand               io.Reader

	step      int
	qop       string
	nonce     string
	cnonce    string
	realm     string
	nc        string
	uri       string
	cipher    string // "rc4" under auth-conf
	serverMax int    // the server's maxbuf
	complete  bool
	layer     *digestLayer
}

// NewDigestMD5 returns a DIGEST-MD5 client. allowed lists acceptable qop
// values in preference order (QOPAuth, QOPAuthInt, QOPAuthConf with the rc4
// cipher); an empty list means QOPAuth. rand supplies the client nonce (crypto/rand.Reader in
// production).
func NewDigestMD5(username, password, protocol, serverID string, allowed []string, rand io.Reader) *DigestMD5 {
	if len(allowed) == 0 {
		allowed = []string{QOPAuth}
	}
	return &DigestMD5{
		username: username, password: password,
		protocol: protocol, serverID: serverID,
		allowed: allowed, rand: rand,
	}
}

// Name returns "DIGEST-MD5".
func (d *DigestMD5) Name() string { return "DIGEST-MD5" }

// Complete reports whether the server proved knowledge of the password.
func (d *DigestMD5) Complete() bool { return d.complete }

// QOP is the negotiated quality of protection.
func (d *DigestMD5) QOP() string { return d.qop }

// Step implements Mechanism. DIGEST-MD5 has no initial response: a nil first
// challenge yields an empty response, asking the server for its challenge.
func (d *DigestMD5) Step(challenge []byte) ([]byte, bool, error) {
	switch d.step {
	case 0:
		if len(challenge) == 0 {
			return nil, false, nil
		}
		d.step = 1
		resp, err := d.respond(challenge)
		return resp, false, err
	case 1:
		d.step = 2
		if err := d.verifyRspAuth(challenge); err != nil {
			return nil, false, err
		}
		d.complete = true
		if d.qop != QOPAuth {
			d.layer = newDigestLayer(d.ha1(), d.qop, d.serverMax, true)
		}
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("%w: DIGEST-MD5 exchange already finished", ErrProtocol)
}

func (d *DigestMD5) respond(challenge []byte) ([]byte, error) {
	dirs, err := ParseDirectives(challenge)
	if err != nil {
		return nil, err
	}
	var realms []string
	var qopOpts, ciphers []string
	d.serverMax = 65536
	seen := map[string]bool{}
	for _, kv := range dirs {
		switch kv.Key {
		case "realm":
			realms = append(realms, kv.Value)
			continue
		case "nonce", "qop", "charset", "algorithm", "maxbuf", "stale", "cipher":
			if seen[kv.Key] {
				return nil, fmt.Errorf("%w: DIGEST-MD5 challenge repeats %q", ErrProtocol, kv.Key)
			}
			seen[kv.Key] = true
		}
		switch kv.Key {
		case "nonce":
			d.nonce = kv.Value
		case "qop":
			for _, q := range strings.Split(kv.Value, ",") {
				if q = strings.TrimSpace(q); q != "" {
					qopOpts = append(qopOpts, q)
				}
			}
		case "cipher":
			for _, c := range strings.Split(kv.Value, ",") {
				ciphers = append(ciphers, strings.TrimSpace(c))
			}
		case "maxbuf":
			n, err := strconv.Atoi(kv.Value)
			if err != nil || n < 256 || n > 1<<24-1 {
				return nil, fmt.Errorf("%w: DIGEST-MD5 maxbuf %q", ErrProtocol, kv.Value)
			}
			d.serverMax = n
		case "algorithm":
			if kv.Value != "md5-sess" {
				return nil, fmt.Errorf("%w: DIGEST-MD5 algorithm %q, want md5-sess", ErrProtocol, kv.Value)
			}
		case "charset":
			if !strings.EqualFold(kv.Value, "utf-8") {
				return nil, fmt.Errorf("%w: DIGEST-MD5 charset %q, want utf-8", ErrProtocol, kv.Value)
			}
		}
	}
	if d.nonce == "" {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge has no nonce", ErrProtocol)
	}
	if !seen["algorithm"] {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge has no algorithm", ErrProtocol)
	}
	if len(qopOpts) == 0 {
		qopOpts = []string{QOPAuth}
	}
	for _, want := range d.allowed {
		if !slices.Contains(qopOpts, want) {
			continue
		}
		if want == QOPAuthConf {
			// Of RFC 2831's ciphers only rc4 (128 bits) is spoken here.
			if !slices.Contains(ciphers, "rc4") {
				continue
			}
			d.cipher = "rc4"
		}
		d.qop = want
		break
	}
	if d.qop == "" {
		return nil, fmt.Errorf("%w: server offers %v (ciphers %v), client accepts %v (auth-conf needs the rc4 cipher)", ErrQOPUnsupported, qopOpts, ciphers, d.allowed)
	}
	if len(realms) > 0 {
		d.realm = realms[0]
	}
	var raw [18]byte
	if _, err := io.ReadFull(d.rand, raw[:]); err != nil {
		return nil, fmt.Errorf("sasl: generating client nonce: %w", err)
	}
	d.cnonce = base64.StdEncoding.EncodeToString(raw[:])
	d.nc = "00000001"
	d.uri = d.protocol + "/" + d.serverID

	var b strings.Builder
	b.WriteString("charset=utf-8,username=")
	b.WriteString(quote(d.username))
	if len(realms) > 0 {
		b.WriteString(",realm=")
		b.WriteString(quote(d.realm))
	}
	b.WriteString(",nonce=")
	b.WriteString(quote(d.nonce))
	b.WriteString(",nc=")
	b.WriteString(d.nc)
	b.WriteString(",cnonce=")
	b.WriteString(quote(d.cnonce))
	b.WriteString(",digest-uri=")
	b.WriteString(quote(d.uri))
	b.WriteString(",maxbuf=65536,response=")
	b.WriteString(d.digest(true))
	b.WriteString(",qop=")
	b.WriteString(d.qop)
	if d.cipher != "" {
		b.WriteString(",cipher=")
		b.WriteString(d.cipher)
	}
	if d.authzid != "" {
		b.WriteString(",authzid=")
		b.WriteString(quote(d.authzid))
	}
	return []byte(b.String()), nil
}

func (d *DigestMD5) verifyRspAuth(msg []byte) error {
	dirs, err := ParseDirectives(msg)
	if err != nil {
		return err
	}
	for _, kv := range dirs {
		if kv.Key == "rspauth" {
			want := d.digest(false)
			if subtle.ConstantTimeCompare([]byte(strings.ToLower(kv.Value)), []byte(want)) != 1 {
				return fmt.Errorf("%w: DIGEST-MD5 rspauth does not match", ErrAuthFailed)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: DIGEST-MD5 final message has no rspauth", ErrProtocol)
}

// SecurityLayer implements Layered: nil under auth.
func (d *DigestMD5) SecurityLayer() SecurityLayer {
	if d.layer == nil {
		return nil
	}
	return d.layer
}

// ha1 is H(A1), the session key the layer's keys derive from.
func (d *DigestMD5) ha1() [16]byte {
	return digestHA1(d.username, d.realm, d.password, d.nonce, d.cnonce, d.authzid)
}

func digestHA1(username, realm, password, nonce, cnonce, authzid string) [16]byte {
	inner := md5.Sum([]byte(username + ":" + realm + ":" + password))
	a1 := bytes.NewBuffer(inner[:])
	a1.WriteString(":" + nonce + ":" + cnonce)
	if authzid != "" {
		a1.WriteString(":" + authzid)
	}
	return md5.Sum(a1.Bytes())
}

// digest computes the response value (client=true) or rspauth (false).
func (d *DigestMD5) digest(client bool) string {
	return DigestResponse(d.username, d.realm, d.password, d.nonce, d.cnonce, d.nc, d.qop, d.uri, d.authzid, client)
}

// DigestResponse computes RFC 2831's response-value (client=true, A2 starts
// with "AUTHENTICATE") or rspauth (client=false) for algorithm md5-sess.
func DigestResponse(username, realm, password, nonce, cnonce, nc, qop, digestURI, authzid string, client bool) string {
	ha1 := digestHA1(username, realm, password, nonce, cnonce, authzid)
	a2 := ":" + digestURI
	if client {
		a2 = "AUTHENTICATE" + a2
	}
	if qop == QOPAuthInt || qop == QOPAuthConf {
		a2 += ":00000000000000000000000000000000"
	}
	ha2 := md5.Sum([]byte(a2))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + nonce + ":" + nc + ":" + cnonce + ":" + qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd[:])
}

// Directive is one name=value pair of a DIGEST-MD5 message.
type Directive struct{ Key, Value string }

// maxDirectives bounds the directives accepted in one message.
const maxDirectives = 64

// ParseDirectives parses a DIGEST-MD5 challenge or response: a
// comma-separated list of name=value or name="quoted\"value" pairs, with
// optional linear white space and empty elements. Keys are lower-cased.
func ParseDirectives(msg []byte) ([]Directive, error) {
	s := string(msg)
	var out []Directive
	i := 0
	skipLWS := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	for {
		skipLWS()
		for i < len(s) && s[i] == ',' {
			i++
			skipLWS()
		}
		if i >= len(s) {
			return out, nil
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := strings.ToLower(s[start:i])
		if key == "" {
			return nil, fmt.Errorf("%w: empty directive name at byte %d", ErrProtocol, start)
		}
		skipLWS()
		if i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("%w: directive %q at byte %d has no value", ErrProtocol, key, start)
		}
		i++
		skipLWS()
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					i++
					closed = true
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%w: directive %q has an unterminated quoted value", ErrProtocol, key)
			}
		} else {
			vs := i
			for i < len(s) && s[i] != ',' {
				i++
			}
			val.WriteString(strings.TrimRight(s[vs:i], " \t\r\n"))
		}
		out = append(out, Directive{Key: key, Value: val.String()})
		if len(out) > maxDirectives {
			return nil, fmt.Errorf("%w: more than %d directives", ErrProtocol, maxDirectives)
		}
		skipLWS()
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("%w: unexpected %q after directive %q", ErrProtocol, s[i], key)
		}
	}
}

// quote renders a quoted-string, escaping '"' and '\'.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// FormatDirectives renders directives, quoting values except for the
// names RFC 2831 sends as tokens.
func FormatDirectives(dirs []Directive) []byte {
	var b strings.Builder
	for i, d := range dirs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Key)
		b.WriteByte('=')
		switch d.Key {
		case "nc", "response", "rspauth", "algorithm", "charset", "maxbuf", "stale":
			b.WriteString(d.Value)
		default:
			b.WriteString(quote(d.Value))
		}
	}
	return []byte(b.String())
}
