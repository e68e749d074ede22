package sasl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestDigestLayerRoundTrip(t *testing.T) {
	ha1 := digestHA1("user", "default", "pw", "nonce", "cnonce", "")
	for _, qop := range []string{QOPAuthInt, QOPAuthConf} {
		t.Run(qop, func(t *testing.T) {
			c := newDigestLayer(ha1, qop, 65536, true)
			s := newDigestLayer(ha1, qop, 65536, false)
			if c.MaxWrap() != 65536-16 {
				t.Errorf("MaxWrap %d", c.MaxWrap())
			}
			for i, msg := range [][]byte{[]byte("first frame"), {}, bytes.Repeat([]byte{7}, 5000)} {
				w, err := c.Wrap(msg)
				if err != nil {
					t.Fatal(err)
				}
				if qop == QOPAuthConf && len(msg) > 4 && bytes.Contains(w, msg) {
					t.Fatal("auth-conf left the message in the clear")
				}
				if qop == QOPAuthInt && !bytes.HasPrefix(w, msg) {
					t.Fatal("auth-int does not carry the message as is")
				}
				got, err := s.Unwrap(w)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("message %d: %q, %v", i, got, err)
				}
				// And back.
				w, _ = s.Wrap(msg)
				if got, err := c.Unwrap(w); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("reply %d: %q, %v", i, got, err)
				}
			}
			// A replay is refused.
			w, _ := c.Wrap([]byte("x"))
			if _, err := s.Unwrap(w); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Unwrap(w); !errors.Is(err, ErrIntegrity) {
				t.Fatalf("a replayed message: %v", err)
			}
		})
	}
	// A flipped bit is caught (integrity: the message; confidentiality: the stream).
	c := newDigestLayer(ha1, QOPAuthInt, 65536, true)
	s := newDigestLayer(ha1, QOPAuthInt, 65536, false)
	w, _ := c.Wrap([]byte("pay 10 euros"))
	w[4] ^= 1
	if _, err := s.Unwrap(w); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("a tampered message: %v", err)
	}
	// The two directions use different keys: our own message does not verify as the server's.
	c2 := newDigestLayer(ha1, QOPAuthInt, 65536, true)
	own, _ := c2.Wrap([]byte("echo"))
	if _, err := newDigestLayer(ha1, QOPAuthInt, 65536, true).Unwrap(own); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("a reflected message: %v", err)
	}
}

func TestDigestNegotiatesLayers(t *testing.T) {
	challenge := func(qop, cipher string) []byte {
		s := `realm="default",nonce="abc",qop="` + qop + `",charset=utf-8,algorithm=md5-sess,maxbuf=4096`
		if cipher != "" {
			s += `,cipher="` + cipher + `"`
		}
		return []byte(s)
	}
	tests := []struct {
		qop, cipher string
		allowed     []string
		want        string
		wantCipher  bool
	}{
		{"auth,auth-int,auth-conf", "3des,rc4,des", []string{QOPAuthConf}, QOPAuthConf, true},
		{"auth,auth-int,auth-conf", "3des,des", []string{QOPAuthConf, QOPAuthInt}, QOPAuthInt, false},
		{"auth,auth-int", "", []string{QOPAuthInt, QOPAuth}, QOPAuthInt, false},
		{"auth-conf", "3des", []string{QOPAuthConf}, "", false},
	}
	for _, tc := range tests {
		d := NewDigestMD5("u", "p", "", "default", tc.allowed, bytes.NewReader(make([]byte, 64)))
		resp, _, err := d.Step(challenge(tc.qop, tc.cipher))
		if tc.want == "" {
			if !errors.Is(err, ErrQOPUnsupported) {
				t.Errorf("%s/%s: %v, want ErrQOPUnsupported", tc.qop, tc.cipher, err)
			}
			continue
		}
		if err != nil || d.QOP() != tc.want {
			t.Errorf("%s/%s %v: qop %q, %v; want %q", tc.qop, tc.cipher, tc.allowed, d.QOP(), err, tc.want)
		}
		if strings.Contains(string(resp), "cipher=rc4") != tc.wantCipher {
			t.Errorf("%s/%s: response %s", tc.qop, tc.cipher, resp)
		}
		if d.serverMax != 4096 {
			t.Errorf("maxbuf %d, want the server's 4096", d.serverMax)
		}
	}
}

func FuzzDigestUnwrap(f *testing.F) {
	ha1 := digestHA1("u", "r", "p", "n", "c", "")
	w, _ := newDigestLayer(ha1, QOPAuthConf, 65536, false).Wrap([]byte("hello"))
	f.Add(w, true)
	w, _ = newDigestLayer(ha1, QOPAuthInt, 65536, false).Wrap([]byte("hello"))
	f.Add(w, false)
	f.Fuzz(func(t *testing.T, b []byte, conf bool) {
		qop := QOPAuthInt
		if conf {
			qop = QOPAuthConf
		}
		p, err := newDigestLayer(ha1, qop, 65536, true).Unwrap(b)
		if err == nil && len(p) > len(b) {
			t.Fatalf("%d bytes out of %d", len(p), len(b))
		}
	})
}
