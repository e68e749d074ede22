package sasl

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// TicketSource supplies Kerberos service tickets: a kerberos.Login.
type TicketSource interface {
	// ServiceTicket returns a ticket for spn (service/host) and its
	// session key.
	ServiceTicket(spn string) (messages.Ticket, types.EncryptionKey, error)
	// ClientPrincipal is the client's name, without realm.
	ClientPrincipal() types.PrincipalName
	// Realm is the client's realm.
	Realm() string
}

// Security layer bits of the GSSAPI SASL negotiation (RFC 4752 3.3).
const (
	layerNone      = 1
	layerIntegrity = 2
	layerPrivacy   = 4
)

// defaultMaxBuffer is the largest wrapped message we accept, and announce.
const defaultMaxBuffer = 1 << 16

// GSSAPI is the SASL GSSAPI mechanism (RFC 4752) with Kerberos V5 (RFC
// 4121), as Hadoop's servers accept it under the KERBEROS method: the first
// response is an AP-REQ without mutual authentication, the server answers
// with its wrapped security-layer offer, and the client's wrapped choice
// ends the exchange. The server proves itself through that offer: only the
// holder of the service key can seal it with the session key. After a
// choice of integrity or privacy, SecurityLayer wraps and unwraps every
// message.
type GSSAPI struct {
	tickets TicketSource
	spn     string
	qops    []string
	now     func() time.Time

	step    int
	key     types.EncryptionKey
	seq     uint64
	qop     string
	maxSend int // largest plaintext the server accepts in one wrap
	layer   *KerberosLayer
}

// NewGSSAPI returns a GSSAPI client for the service principal service/host.
// qops lists the acceptable qualities of protection, most preferred first
// (QOPAuth, QOPAuthInt, QOPAuthConf). now dates the authenticator (the
// server checks it against its clock); nil means time.Now.
func NewGSSAPI(tickets TicketSource, service, host string, qops []string, now func() time.Time) *GSSAPI {
	if now == nil {
		now = time.Now
	}
	return &GSSAPI{tickets: tickets, spn: service + "/" + host, qops: qops, now: now}
}

// Name implements Mechanism.
func (g *GSSAPI) Name() string { return "GSSAPI" }

// Complete implements Mechanism.
func (g *GSSAPI) Complete() bool { return g.step == 2 }

// QOP implements Mechanism.
func (g *GSSAPI) QOP() string { return g.qop }

// SecurityLayer is the negotiated layer: nil for QOPAuth.
func (g *GSSAPI) SecurityLayer() SecurityLayer {
	if g.layer == nil {
		return nil
	}
	return g.layer
}

// SPN is the service principal authenticated to.
func (g *GSSAPI) SPN() string { return g.spn }

// krb5OID is the Kerberos V5 GSS-API mechanism, 1.2.840.113554.1.2.2, DER.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// GSS context flags (RFC 2744) carried in the authenticator checksum.
const (
	gssConfFlag  = 16
	gssIntegFlag = 32
)

// Step implements Mechanism.
func (g *GSSAPI) Step(challenge []byte) ([]byte, bool, error) {
	switch g.step {
	case 0:
		tok, err := g.initialToken()
		if err != nil {
			return nil, false, err
		}
		g.step = 1
		return tok, false, nil
	case 1:
		return g.negotiate(challenge)
	}
	return nil, true, fmt.Errorf("%w: GSSAPI: challenge after completion", ErrProtocol)
}

// initialToken builds the GSS-API initial context token around an AP-REQ
// (RFC 2743 3.1, RFC 4121 4.1).
func (g *GSSAPI) initialToken() ([]byte, error) {
	tkt, key, err := g.tickets.ServiceTicket(g.spn)
	if err != nil {
		return nil, err
	}
	if !rfc4121(key.KeyType) {
		return nil, fmt.Errorf("%w: GSSAPI: the ticket for %s uses encryption type %d; only AES (RFC 3962, RFC 8009) types are supported: list aes256-cts-hmac-sha1-96 first in krb5.conf's default_tgs_enctypes",
			ErrProtocol, g.spn, key.KeyType)
	}
	auth, err := types.NewAuthenticator(g.tickets.Realm(), g.tickets.ClientPrincipal())
	if err != nil {
		return nil, err
	}
	t := g.now().UTC()
	auth.CTime = t.Truncate(time.Second)
	auth.Cusec = t.Nanosecond() / 1000
	// RFC 4121 4.1.1: Lgth (16), Bnd (no channel bindings), Flags.
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck[0:], 16)
	binary.LittleEndian.PutUint32(ck[20:], gssIntegFlag|gssConfFlag)
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: building the AP-REQ for %s: %w", g.spn, err)
	}
	apreq, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: encoding the AP-REQ for %s: %w", g.spn, err)
	}
	g.key = key
	g.seq = uint64(auth.SeqNumber)
	inner := append(append(append([]byte{}, krb5OID...), 0x01, 0x00), apreq...)
	return append(append([]byte{0x60}, derLength(len(inner))...), inner...), nil
}

// negotiate answers the server's wrapped security-layer offer (RFC 4752
// 3.1): one octet of offered layers and three of its maximum buffer.
func (g *GSSAPI) negotiate(challenge []byte) ([]byte, bool, error) {
	if len(challenge) == 0 {
		return nil, false, fmt.Errorf("%w: GSSAPI: empty security-layer offer from %s (did the server expect mutual authentication?)", ErrProtocol, g.spn)
	}
	offer, err := g.unwrapFromAcceptor(challenge)
	if err != nil {
		return nil, false, fmt.Errorf("GSSAPI: security-layer offer from %s: %w", g.spn, err)
	}
	if len(offer) != 4 {
		return nil, false, fmt.Errorf("%w: GSSAPI: security-layer offer of %d bytes, want 4", ErrProtocol, len(offer))
	}
	mask := offer[0]
	serverMax := int(offer[1])<<16 | int(offer[2])<<8 | int(offer[3])
	var chosen byte
	for _, q := range g.qops {
		var bit byte
		switch q {
		case QOPAuth:
			bit = layerNone
		case QOPAuthInt:
			bit = layerIntegrity
		case QOPAuthConf:
			bit = layerPrivacy
		}
		if mask&bit != 0 {
			chosen, g.qop = bit, q
			break
		}
	}
	if chosen == 0 {
		return nil, false, fmt.Errorf("%w: server %s offers %s, the client accepts %v (hadoop.rpc.protection)", ErrQOPUnsupported, g.spn, layerNames(mask), g.qops)
	}
	reply := []byte{chosen, 0, 0, 0}
	if chosen != layerNone {
		if serverMax == 0 {
			return nil, false, fmt.Errorf("%w: GSSAPI: server %s offers a security layer with a zero buffer", ErrProtocol, g.spn)
		}
		m := uint32(defaultMaxBuffer)
		reply[1], reply[2], reply[3] = byte(m>>16), byte(m>>8), byte(m)
		// The plaintext of one wrap must fit the server's buffer once wrapped.
		g.maxSend = serverMax - wrapOverhead
		if g.maxSend < 256 {
			return nil, false, fmt.Errorf("%w: GSSAPI: server %s announces a buffer of %d bytes", ErrProtocol, g.spn, serverMax)
		}
	}
	// No authorization id: the server takes the authenticated principal.
	tok, err := g.wrap(reply, false)
	if err != nil {
		return nil, false, err
	}
	if chosen != layerNone {
		g.layer = &KerberosLayer{g: g, conf: chosen == layerPrivacy}
	}
	g.step = 2
	return tok, true, nil
}

func layerNames(mask byte) string {
	var b []string
	if mask&layerNone != 0 {
		b = append(b, QOPAuth)
	}
	if mask&layerIntegrity != 0 {
		b = append(b, QOPAuthInt)
	}
	if mask&layerPrivacy != 0 {
		b = append(b, QOPAuthConf)
	}
	if len(b) == 0 {
		return "no layer"
	}
	return fmt.Sprint(b)
}

// derLength encodes a DER length.
func derLength(n int) []byte {
	if n < 0x80 {
		return []byte{byte(n)}
	}
	var b []byte
	for v := n; v > 0; v >>= 8 {
		b = append([]byte{byte(v)}, b...)
	}
	return append([]byte{0x80 | byte(len(b))}, b...)
}

// rfc4121 reports whether an encryption type uses RFC 4121 ("CFX") tokens.
func rfc4121(etype int32) bool {
	switch etype {
	case 17, 18, 19: // aes128/256-cts-hmac-sha1-96, aes128-cts-hmac-sha256-128 (gokrb5 mis-sizes the key of 20)
		return true
	}
	return false
}

// RFC 4121 wrap tokens.
const (
	wrapHeaderLen = 16
	// wrapOverhead bounds what wrapping adds to a message: header, header
	// copy, confounder and checksum of the largest supported type.
	wrapOverhead = 128

	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04

	// Key usages (RFC 4121 2): Wrap tokens use the SEAL usages whether
	// sealed or not; the SIGN usages (23, 25) are for MIC tokens.
	usageAcceptorSeal  = 22
	usageInitiatorSeal = 24
)

// ErrIntegrity is wrapped when a wrapped message fails verification.
var ErrIntegrity = errors.New("sasl: message integrity check failed")

func wrapHeader(flags byte, ec, rrc uint16, seq uint64) []byte {
	h := make([]byte, wrapHeaderLen)
	h[0], h[1], h[2], h[3] = 0x05, 0x04, flags, 0xff
	binary.BigEndian.PutUint16(h[4:], ec)
	binary.BigEndian.PutUint16(h[6:], rrc)
	binary.BigEndian.PutUint64(h[8:], seq)
	return h
}

// wrap makes an initiator wrap token of p, sealed (encrypted) if conf.
func (g *GSSAPI) wrap(p []byte, conf bool) ([]byte, error) {
	et, err := crypto.GetEtype(g.key.KeyType)
	if err != nil {
		return nil, err
	}
	seq := g.seq
	g.seq++
	if conf {
		h := wrapHeader(flagSealed, 0, 0, seq)
		msg := append(append(make([]byte, 0, len(p)+wrapHeaderLen), p...), h...)
		_, ct, err := et.EncryptMessage(g.key.KeyValue, msg, usageInitiatorSeal)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: sealing: %w", err)
		}
		return append(h, ct...), nil
	}
	ck, err := et.GetChecksumHash(g.key.KeyValue, append(append(make([]byte, 0, len(p)+wrapHeaderLen), p...), wrapHeader(0, 0, 0, seq)...), usageInitiatorSeal)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: signing: %w", err)
	}
	h := wrapHeader(0, uint16(len(ck)), 0, seq)
	return append(append(h, p...), ck...), nil
}

// unwrapFromAcceptor verifies (and, if sealed, decrypts) a wrap token sent
// by the server.
func (g *GSSAPI) unwrapFromAcceptor(tok []byte) ([]byte, error) {
	et, err := crypto.GetEtype(g.key.KeyType)
	if err != nil {
		return nil, err
	}
	return unwrapToken(tok, g.key, et.GetHMACBitLength()/8)
}

// unwrapToken decodes an RFC 4121 wrap token sent by the acceptor under
// key, whose checksums are cksumLen bytes. It never panics on bad input.
func unwrapToken(tok []byte, key types.EncryptionKey, cksumLen int) ([]byte, error) {
	if len(tok) < wrapHeaderLen {
		return nil, fmt.Errorf("%w: wrap token of %d bytes", ErrProtocol, len(tok))
	}
	if tok[0] != 0x05 || tok[1] != 0x04 || tok[3] != 0xff {
		return nil, fmt.Errorf("%w: not an RFC 4121 wrap token (starts %x)", ErrProtocol, tok[:4])
	}
	flags := tok[2]
	if flags&flagSentByAcceptor == 0 {
		return nil, fmt.Errorf("%w: wrap token not sent by the acceptor (a reflected message?)", ErrIntegrity)
	}
	if flags&flagAcceptorSubkey != 0 {
		return nil, fmt.Errorf("%w: wrap token under an acceptor subkey, which was not negotiated", ErrProtocol)
	}
	ec := int(binary.BigEndian.Uint16(tok[4:]))
	rrc := int(binary.BigEndian.Uint16(tok[6:]))
	body := tok[wrapHeaderLen:]
	if len(body) > 0 {
		// Undo the right rotation by rrc.
		r := rrc % len(body)
		body = append(append([]byte{}, body[r:]...), body[:r]...)
	}
	if flags&flagSealed != 0 {
		et, err := crypto.GetEtype(key.KeyType)
		if err != nil {
			return nil, err
		}
		if len(body) < et.GetConfounderByteSize()+cksumLen+wrapHeaderLen+ec {
			return nil, fmt.Errorf("%w: sealed wrap token of %d bytes is too short", ErrProtocol, len(tok))
		}
		pt, err := et.DecryptMessage(key.KeyValue, body, usageAcceptorSeal)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrIntegrity, err)
		}
		if len(pt) < wrapHeaderLen+ec {
			return nil, fmt.Errorf("%w: sealed wrap token decrypts to %d bytes", ErrProtocol, len(pt))
		}
		hc := pt[len(pt)-wrapHeaderLen:]
		want := append([]byte{}, tok[:wrapHeaderLen]...)
		want[6], want[7] = 0, 0 // the encrypted copy carries RRC 0
		if !bytes.Equal(hc, want) {
			return nil, fmt.Errorf("%w: sealed header copy differs", ErrIntegrity)
		}
		return pt[:len(pt)-wrapHeaderLen-ec], nil
	}
	if ec != cksumLen || len(body) < ec {
		return nil, fmt.Errorf("%w: wrap token with a %d-byte checksum field, want %d", ErrProtocol, ec, cksumLen)
	}
	p, ck := body[:len(body)-ec], body[len(body)-ec:]
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	h := append([]byte{}, tok[:wrapHeaderLen]...)
	h[4], h[5], h[6], h[7] = 0, 0, 0, 0
	want, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, p...), h...), usageAcceptorSeal)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(want, ck) {
		return nil, fmt.Errorf("%w: wrap token checksum mismatch", ErrIntegrity)
	}
	return p, nil
}

// KerberosLayer is the integrity or privacy layer of a GSSAPI exchange.
// Wrap and Unwrap may be called from different goroutines, but each from
// one at a time.
type KerberosLayer struct {
	g    *GSSAPI
	conf bool
}

// Wrap implements SecurityLayer.
func (l *KerberosLayer) Wrap(p []byte) ([]byte, error) { return l.g.wrap(p, l.conf) }

// Unwrap implements SecurityLayer.
func (l *KerberosLayer) Unwrap(p []byte) ([]byte, error) { return l.g.unwrapFromAcceptor(p) }

// MaxWrap implements SecurityLayer: the largest plaintext of one Wrap.
func (l *KerberosLayer) MaxWrap() int { return l.g.maxSend }
