package sasl

import (
	"bytes"
	"crypto/rand"
	"errors"
	"slices"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

func testKey(t testing.TB, etype int32) types.EncryptionKey {
	et, err := crypto.GetEtype(etype)
	if err != nil {
		t.Fatal(err)
	}
	k := make([]byte, et.GetKeyByteSize())
	rand.Read(k)
	return types.EncryptionKey{KeyType: etype, KeyValue: k}
}

// acceptorWrap is the server side of RFC 4121 wrap tokens, for tests: what a
// Hadoop server sends. rrc rotates the body as some implementations do.
func acceptorWrap(t testing.TB, key types.EncryptionKey, p []byte, seal bool, rrc uint16, seq uint64) []byte {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	var h, body []byte
	if seal {
		h = wrapHeader(flagSentByAcceptor|flagSealed, 0, 0, seq)
		_, ct, err := et.EncryptMessage(key.KeyValue, append(append([]byte{}, p...), h...), usageAcceptorSeal)
		if err != nil {
			t.Fatal(err)
		}
		body = ct
	} else {
		ck, err := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, p...), wrapHeader(flagSentByAcceptor, 0, 0, seq)...), usageAcceptorSeal)
		if err != nil {
			t.Fatal(err)
		}
		h = wrapHeader(flagSentByAcceptor, uint16(len(ck)), 0, seq)
		body = append(append([]byte{}, p...), ck...)
	}
	h[6], h[7] = byte(rrc>>8), byte(rrc)
	if n := len(body); n > 0 {
		r := int(rrc) % n
		body = append(append([]byte{}, body[n-r:]...), body[:n-r]...) // rotate right
	}
	return append(h, body...)
}

func TestUnwrapAcceptorTokens(t *testing.T) {
	for _, etype := range []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96, etypeID.AES128_CTS_HMAC_SHA256_128} {
		key := testKey(t, etype)
		et, _ := crypto.GetEtype(etype)
		cks := et.GetHMACBitLength() / 8
		for _, seal := range []bool{false, true} {
			for _, rrc := range []uint16{0, 12, 28, 1000} {
				p := []byte("a frame of the RPC stream")
				tok := acceptorWrap(t, key, p, seal, rrc, 42)
				got, err := unwrapToken(tok, key, cks)
				if err != nil {
					t.Fatalf("etype %d seal %v rrc %d: %v", etype, seal, rrc, err)
				}
				if !bytes.Equal(got, p) {
					t.Fatalf("etype %d seal %v rrc %d: got %q", etype, seal, rrc, got)
				}
				// Any flipped bit is caught.
				for i := 8; i < len(tok); i += 7 {
					bad := append([]byte{}, tok...)
					bad[i] ^= 0x10
					if _, err := unwrapToken(bad, key, cks); err == nil && i >= wrapHeaderLen {
						t.Fatalf("etype %d seal %v: flipping byte %d went unnoticed", etype, seal, i)
					}
				}
			}
		}
	}
}

func TestUnwrapRefusesOurOwnTokens(t *testing.T) {
	key := testKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	g := &GSSAPI{key: key, seq: 7}
	for _, conf := range []bool{false, true} {
		tok, err := g.wrap([]byte("hello"), conf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unwrapToken(tok, key, 12); !errors.Is(err, ErrIntegrity) {
			t.Fatalf("a reflected initiator token: err = %v, want ErrIntegrity", err)
		}
	}
}

// TestInitiatorTokens checks our tokens as an acceptor would: sealed ones
// decrypt under the initiator seal usage with the header copy at the end,
// signed ones carry the plaintext and a checksum under the same usage.
func TestInitiatorTokens(t *testing.T) {
	key := testKey(t, etypeID.AES128_CTS_HMAC_SHA1_96)
	et, _ := crypto.GetEtype(key.KeyType)
	g := &GSSAPI{key: key, seq: 100}
	p := []byte{1, 0, 0, 0}
	tok, err := g.wrap(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if tok[2] != 0 || tok[4] != 0 || tok[5] != 12 || !bytes.Equal(tok[16:20], p) {
		t.Fatalf("signed token %x", tok)
	}
	ck, _ := et.GetChecksumHash(key.KeyValue, append(append([]byte{}, p...), wrapHeader(0, 0, 0, 100)...), usageInitiatorSeal)
	if !bytes.Equal(tok[20:], ck) {
		t.Fatal("checksum of a signed token is not over plaintext||header under usage 24")
	}
	tok, err = g.wrap([]byte("secret"), true)
	if err != nil {
		t.Fatal(err)
	}
	if tok[2] != flagSealed {
		t.Fatalf("sealed token flags %x", tok[2])
	}
	pt, err := et.DecryptMessage(key.KeyValue, tok[16:], usageInitiatorSeal)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pt, append([]byte("secret"), tok[:16]...)) {
		t.Fatalf("sealed plaintext %x", pt)
	}
	if seq := tok[15]; seq != 101 {
		t.Errorf("sequence number %d, want 101 (incremented per token)", seq)
	}
}

func TestNegotiateChoosesByPreference(t *testing.T) {
	key := testKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	tests := []struct {
		offer byte
		qops  []string
		want  string
		err   error
	}{
		{layerNone | layerIntegrity | layerPrivacy, []string{QOPAuthConf, QOPAuth}, QOPAuthConf, nil},
		{layerNone | layerIntegrity | layerPrivacy, []string{QOPAuth, QOPAuthConf}, QOPAuth, nil},
		{layerIntegrity, []string{QOPAuthConf, QOPAuthInt}, QOPAuthInt, nil},
		{layerPrivacy, []string{QOPAuth}, "", ErrQOPUnsupported},
	}
	for _, tc := range tests {
		g := &GSSAPI{key: key, qops: tc.qops, step: 1, spn: "hdfs/nn"}
		_, _, err := g.Step(acceptorWrap(t, key, []byte{tc.offer, 0, 0x40, 0}, false, 0, 1))
		if !errors.Is(err, tc.err) && (err != nil || tc.err != nil) {
			t.Fatalf("offer %b %v: err %v, want %v", tc.offer, tc.qops, err, tc.err)
		}
		if tc.err != nil {
			continue
		}
		if g.QOP() != tc.want || !g.Complete() {
			t.Fatalf("offer %b %v: qop %q complete %v, want %q", tc.offer, tc.qops, g.QOP(), g.Complete(), tc.want)
		}
		if (g.SecurityLayer() == nil) != (tc.want == QOPAuth) {
			t.Fatalf("qop %s: layer %v", tc.want, g.SecurityLayer())
		}
		if l := g.SecurityLayer(); l != nil && l.MaxWrap() != 0x4000-wrapOverhead {
			t.Fatalf("MaxWrap %d for a server buffer of 16384", l.MaxWrap())
		}
	}
}

func FuzzUnwrapToken(f *testing.F) {
	key := testKey(f, etypeID.AES128_CTS_HMAC_SHA1_96)
	f.Add(acceptorWrap(f, key, []byte("x"), false, 0, 1))
	f.Add(acceptorWrap(f, key, []byte("xy"), true, 5, 2))
	f.Add([]byte{5, 4, 3, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, tok []byte) {
		p, err := unwrapToken(tok, key, 12)
		if err == nil && len(p) > len(tok) {
			t.Fatalf("unwrapped %d bytes out of a %d-byte token", len(p), len(tok))
		}
	})
}

// FuzzGSSAPINegotiate fuzzes the server's security-layer offer, the second
// step of GSSAPI: raw tokens (mostly refused at the wrap layer), and offers
// of fuzzed content correctly wrapped under the session key, so the
// decoding of the offer itself is reached.
func FuzzGSSAPINegotiate(f *testing.F) {
	key := types.EncryptionKey{KeyType: etypeID.AES128_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{0x5a}, 16)}
	allQOPs := [][]string{
		{QOPAuth}, {QOPAuthInt}, {QOPAuthConf},
		{QOPAuthConf, QOPAuthInt, QOPAuth}, {QOPAuth, QOPAuthConf}, {},
	}
	for _, offer := range [][]byte{
		{layerNone | layerIntegrity | layerPrivacy, 0x01, 0x00, 0x00},
		{layerNone, 0, 0, 0},
		{layerPrivacy, 0, 0x01, 0x00}, // buffer too small for a layer
		{layerIntegrity, 0, 0, 0},     // zero buffer
		{0, 0xff, 0xff, 0xff},         // no layer at all
		{layerNone, 0, 0},             // short
	} {
		f.Add(false, offer, false, uint16(0), uint8(3))
		f.Add(false, offer, true, uint16(7), uint8(1))
	}
	f.Add(true, acceptorWrap(f, key, []byte{layerNone, 0, 0, 0}, false, 0, 1), false, uint16(0), uint8(0))
	f.Add(true, []byte{}, false, uint16(0), uint8(0))
	f.Add(true, []byte{5, 4, 1, 0xff, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, false, uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, raw bool, data []byte, seal bool, rrc uint16, qopIdx uint8) {
		qops := allQOPs[int(qopIdx)%len(allQOPs)]
		challenge := data
		if !raw {
			challenge = acceptorWrap(t, key, data, seal, rrc, 9)
		}
		g := &GSSAPI{key: key, qops: qops, step: 1, spn: "nn/host", seq: 3}
		reply, done, err := g.Step(challenge)
		if err != nil {
			if done || g.Complete() || g.SecurityLayer() != nil {
				t.Fatalf("refused offer left done=%v complete=%v layer=%v", done, g.Complete(), g.SecurityLayer())
			}
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrQOPUnsupported) {
				t.Fatalf("error wraps none of ErrProtocol, ErrIntegrity, ErrQOPUnsupported: %v", err)
			}
			if !raw && len(data) == 4 && data[0]&(layerNone|layerIntegrity|layerPrivacy) == 0 && !errors.Is(err, ErrQOPUnsupported) {
				t.Fatalf("offer of no layer: err = %v, want ErrQOPUnsupported", err)
			}
			return
		}
		if !done || !g.Complete() || !slices.Contains(qops, g.QOP()) {
			t.Fatalf("accepted offer: done=%v complete=%v qop=%q of %v", done, g.Complete(), g.QOP(), qops)
		}
		if !raw && len(data) != 4 {
			t.Fatalf("accepted an offer of %d bytes", len(data))
		}
		if l := g.SecurityLayer(); (l == nil) != (g.QOP() == QOPAuth) || l != nil && l.MaxWrap() < 256 {
			t.Fatalf("qop %s with layer %v", g.QOP(), l)
		}
		// The reply is our wrap token of the 4-byte choice, never sealed.
		if len(reply) < wrapHeaderLen+4 || reply[0] != 0x05 || reply[1] != 0x04 || reply[2] != 0 {
			t.Fatalf("reply %x is not a signed initiator wrap token", reply)
		}
		if _, _, err := g.Step(challenge); !errors.Is(err, ErrProtocol) {
			t.Fatalf("step after completion: err = %v, want ErrProtocol", err)
		}
	})
}
