package sasl

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4" //nolint:staticcheck // RFC 2831 auth-conf: rc4 is the cipher Hadoop's DIGEST-MD5 servers offer
	"encoding/binary"
	"fmt"
)

// digestLayer is DIGEST-MD5's integrity (auth-int) and confidentiality
// (auth-conf, rc4) layer, RFC 2831 section 2.3 and 2.4: each message is
// followed by the first 10 bytes of HMAC-MD5(Ki, seq||msg), the message
// type 1 and the sequence number; under auth-conf the message and the MAC
// travel encrypted with an rc4 stream per direction. Wrap and Unwrap each
// keep their own sequence number and cipher state; each is used by one
// goroutine at a time.
type digestLayer struct {
	conf             bool
	maxWrap          int
	sendKi, recvKi   []byte
	sendRC4, recvRC4 *rc4.Cipher
	sendSeq, recvSeq uint32
}

const digestTrailer = 16 // 10 bytes of MAC, 2 of message type, 4 of sequence number

// Magic constants of RFC 2831 2.3 and 2.4.
const (
	magicSignC2S = "Digest session key to client-to-server signing key magic constant"
	magicSignS2C = "Digest session key to server-to-client signing key magic constant"
	magicSealC2S = "Digest H(A1) to client-to-server sealing key magic constant"
	magicSealS2C = "Digest H(A1) to server-to-client sealing key magic constant"
)

// newDigestLayer derives the keys from H(A1) for the client side
// (client=true) or the server side (tests). peerMax is the peer's maxbuf.
func newDigestLayer(ha1 [16]byte, qop string, peerMax int, client bool) *digestLayer {
	kd := func(magic string, n int) []byte {
		k := md5.Sum(append(append([]byte{}, ha1[:n]...), magic...))
		return k[:]
	}
	l := &digestLayer{conf: qop == QOPAuthConf, maxWrap: peerMax - digestTrailer}
	sendSign, recvSign, sendSeal, recvSeal := magicSignC2S, magicSignS2C, magicSealC2S, magicSealS2C
	if !client {
		sendSign, recvSign, sendSeal, recvSeal = recvSign, sendSign, recvSeal, sendSeal
	}
	l.sendKi, l.recvKi = kd(sendSign, 16), kd(recvSign, 16)
	if l.conf {
		// rc4 (128 bits), the one cipher negotiated, keys from all 16 bytes of H(A1).
		l.sendRC4, _ = rc4.NewCipher(kd(sendSeal, 16))
		l.recvRC4, _ = rc4.NewCipher(kd(recvSeal, 16))
	}
	return l
}

func digestMAC(ki []byte, seq uint32, msg []byte) []byte {
	m := hmac.New(md5.New, ki)
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	m.Write(s[:])
	m.Write(msg)
	return m.Sum(nil)[:10]
}

// Wrap implements SecurityLayer.
func (l *digestLayer) Wrap(p []byte) ([]byte, error) {
	seq := l.sendSeq
	l.sendSeq++
	mac := digestMAC(l.sendKi, seq, p)
	out := make([]byte, 0, len(p)+digestTrailer)
	if l.conf {
		body := append(append(make([]byte, 0, len(p)+10), p...), mac...)
		enc := make([]byte, len(body))
		l.sendRC4.XORKeyStream(enc, body)
		out = append(out, enc...)
	} else {
		out = append(append(out, p...), mac...)
	}
	out = binary.BigEndian.AppendUint16(out, 1)
	return binary.BigEndian.AppendUint32(out, seq), nil
}

// Unwrap implements SecurityLayer.
func (l *digestLayer) Unwrap(w []byte) ([]byte, error) {
	if len(w) < digestTrailer {
		return nil, fmt.Errorf("%w: DIGEST-MD5 wrapped message of %d bytes", ErrProtocol, len(w))
	}
	n := len(w)
	if t := binary.BigEndian.Uint16(w[n-6:]); t != 1 {
		return nil, fmt.Errorf("%w: DIGEST-MD5 message type %d, want 1", ErrProtocol, t)
	}
	seq := binary.BigEndian.Uint32(w[n-4:])
	if seq != l.recvSeq {
		return nil, fmt.Errorf("%w: DIGEST-MD5 sequence number %d, want %d (a replayed or lost message)", ErrIntegrity, seq, l.recvSeq)
	}
	body := w[:n-6]
	if l.conf {
		dec := make([]byte, len(body))
		l.recvRC4.XORKeyStream(dec, body)
		body = dec
	}
	p, mac := body[:len(body)-10], body[len(body)-10:]
	if !hmac.Equal(mac, digestMAC(l.recvKi, seq, p)) {
		return nil, fmt.Errorf("%w: DIGEST-MD5 message MAC mismatch", ErrIntegrity)
	}
	l.recvSeq++
	return p, nil
}

// MaxWrap implements SecurityLayer.
func (l *digestLayer) MaxWrap() int { return l.maxWrap }
