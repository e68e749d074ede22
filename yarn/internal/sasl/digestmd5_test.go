package sasl

import (
	"bytes"
	"crypto/rand"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The worked examples of RFC 2831 section 4.
func TestDigestResponseRFC2831Examples(t *testing.T) {
	tests := []struct {
		name                      string
		nonce, cnonce, uri        string
		wantResponse, wantRspauth string
	}{
		{"imap", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "imap/elwood.innosoft.com",
			"d388dad90d4bbd760a152321f2143af7", "ea40f60335c427b5527b84dbabcdfffd"},
		{"acap", "OA9BSXrbuRhWay", "OA9BSuZWMSpW8m", "acap/elwood.innosoft.com",
			"6084c6db3fede7352c551284490fd0fc", "2f0b3d7c3c2e486600ef710726aa2eae"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DigestResponse("chris", "elwood.innosoft.com", "secret", tt.nonce, tt.cnonce, "00000001", "auth", tt.uri, "", true)
			if got != tt.wantResponse {
				t.Errorf("response = %s, want %s", got, tt.wantResponse)
			}
			got = DigestResponse("chris", "elwood.innosoft.com", "secret", tt.nonce, tt.cnonce, "00000001", "auth", tt.uri, "", false)
			if got != tt.wantRspauth {
				t.Errorf("rspauth = %s, want %s", got, tt.wantRspauth)
			}
		})
	}
}

// fixedReader yields the same bytes forever, to pin the client nonce.
type fixedReader byte

func (f fixedReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

func TestDigestMD5ClientMessage(t *testing.T) {
	c := NewDigestMD5("chris", "secret", "imap", "elwood.innosoft.com", nil, fixedReader(0))
	resp, done, err := c.Step(nil)
	if err != nil || done || resp != nil {
		t.Fatalf("initial step = %q, %v, %v; want no initial response", resp, done, err)
	}
	resp, done, err = c.Step([]byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`))
	if err != nil || done {
		t.Fatalf("step = %v, %v", done, err)
	}
	dirs, err := ParseDirectives(resp)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range dirs {
		got[d.Key] = d.Value
	}
	cnonce := "AAAAAAAAAAAAAAAAAAAAAAAA"
	want := map[string]string{
		"charset": "utf-8", "username": "chris", "realm": "elwood.innosoft.com",
		"nonce": "OA6MG9tEQGm2hh", "nc": "00000001", "cnonce": cnonce,
		"digest-uri": "imap/elwood.innosoft.com", "maxbuf": "65536", "qop": "auth",
		"response": DigestResponse("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", cnonce, "00000001", "auth", "imap/elwood.innosoft.com", "", true),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("response directives:\n got %v\nwant %v", got, want)
	}
	rsp := DigestResponse("chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", cnonce, "00000001", "auth", "imap/elwood.innosoft.com", "", false)
	if _, _, err := c.Step([]byte("rspauth=" + strings.Repeat("0", 32))); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("wrong rspauth accepted: %v", err)
	}
	c2 := NewDigestMD5("chris", "secret", "imap", "elwood.innosoft.com", nil, fixedReader(0))
	c2.Step([]byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`))
	if _, done, err := c2.Step([]byte("rspauth=" + rsp)); err != nil || !done || !c2.Complete() || c2.QOP() != QOPAuth {
		t.Fatalf("final step: done=%v err=%v complete=%v", done, err, c2.Complete())
	}
}

func TestDigestMD5AgainstServer(t *testing.T) {
	srv := &DigestMD5Server{Realm: "default", ServerID: "default", Rand: rand.Reader,
		Password: func(u string) (string, bool) { return "pw-" + u, u == "alice" }}
	for _, tt := range []struct {
		user, password string
		wantErr        error
	}{
		{"alice", "pw-alice", nil},
		{"alice", "wrong", ErrAuthFailed},
		{"bob", "pw-bob", ErrAuthFailed},
	} {
		ch, err := srv.Challenge()
		if err != nil {
			t.Fatal(err)
		}
		c := NewDigestMD5(tt.user, tt.password, "", "default", nil, rand.Reader)
		resp, _, err := c.Step(ch)
		if err != nil {
			t.Fatal(err)
		}
		final, user, err := srv.Verify(resp)
		if !errors.Is(err, tt.wantErr) {
			t.Fatalf("%s/%s: Verify err = %v, want %v", tt.user, tt.password, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		if user != tt.user {
			t.Errorf("user = %q", user)
		}
		if _, done, err := c.Step(final); err != nil || !done {
			t.Fatalf("client rejected server proof: %v", err)
		}
	}
}

func TestDigestMD5ChallengeErrors(t *testing.T) {
	tests := []struct {
		name      string
		challenge string
		allowed   []string
		want      error
	}{
		{"no nonce", `realm="r",qop="auth",algorithm=md5-sess`, nil, ErrProtocol},
		{"no algorithm", `nonce="n",qop="auth"`, nil, ErrProtocol},
		{"bad algorithm", `nonce="n",algorithm=md5`, nil, ErrProtocol},
		{"repeated nonce", `nonce="n",nonce="m",algorithm=md5-sess`, nil, ErrProtocol},
		{"integrity only", `nonce="n",qop="auth-int",algorithm=md5-sess`, nil, ErrQOPUnsupported},
		{"privacy wanted", `nonce="n",qop="auth,auth-conf",algorithm=md5-sess`, []string{QOPAuthConf}, ErrQOPUnsupported},
		{"unterminated", `nonce="n`, nil, ErrProtocol},
		{"garbage", `=x`, nil, ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewDigestMD5("u", "p", "", "default", tt.allowed, rand.Reader)
			if _, _, err := c.Step([]byte(tt.challenge)); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseDirectives(t *testing.T) {
	got, err := ParseDirectives([]byte(` , Realm="a\"b\\c" ,, qop = "auth, auth-int" ,nc=00000001 , stale=true,`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Directive{{"realm", `a"b\c`}, {"qop", "auth, auth-int"}, {"nc", "00000001"}, {"stale", "true"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	back, err := ParseDirectives(FormatDirectives(want))
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip = %q, %v", back, err)
	}
}

func FuzzParseDirectives(f *testing.F) {
	f.Add([]byte(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`rspauth=ea40f60335c427b5527b84dbabcdfffd`))
	f.Add([]byte(`a="\"",,b=c`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dirs, err := ParseDirectives(data)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error does not wrap ErrProtocol: %v", err)
			}
			return
		}
		back, err := ParseDirectives(FormatDirectives(dirs))
		if err != nil {
			t.Fatalf("formatted directives do not parse: %v", err)
		}
		if len(back) != len(dirs) {
			t.Fatalf("round trip changed %d directives into %d", len(dirs), len(back))
		}
		for i := range dirs {
			if back[i].Key != dirs[i].Key {
				t.Fatalf("round trip changed key %q to %q", dirs[i].Key, back[i].Key)
			}
		}
	})
}

func FuzzDigestMD5Challenge(f *testing.F) {
	f.Add([]byte(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`nonce="x",algorithm=md5-sess`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewDigestMD5("u", "p", "", "default", nil, fixedReader(1))
		resp, _, err := c.Step(data)
		if err != nil {
			return
		}
		if len(data) == 0 {
			if resp != nil {
				t.Fatal("DIGEST-MD5 has no initial response, but one was produced")
			}
			return
		}
		if _, err := ParseDirectives(resp); err != nil {
			t.Fatalf("our response does not parse: %v", err)
		}
		if !bytes.Contains(resp, []byte("response=")) {
			t.Fatal("response without digest")
		}
	})
}

// FuzzDigestMD5Final fuzzes the server's final message (the rspauth the
// client verifies in its second step) after a valid first round, under each
// quality of protection.
func FuzzDigestMD5Final(f *testing.F) {
	const challenge = `realm="default",nonce="n0nce",qop="auth,auth-int,auth-conf",cipher="rc4,3des",charset=utf-8,algorithm=md5-sess`
	qops := []string{QOPAuth, QOPAuthInt, QOPAuthConf}
	cnonce := "AQEBAQEBAQEBAQEBAQEBAQEB" // base64 of fixedReader(1)'s 18 bytes
	for i, q := range qops {
		rsp := DigestResponse("u", "default", "p", "n0nce", cnonce, "00000001", q, "/default", "", false)
		f.Add(uint8(i), []byte("rspauth="+rsp))
		f.Add(uint8(i), []byte(`rspauth="`+strings.ToUpper(rsp)+`",qop=auth`))
	}
	f.Add(uint8(0), []byte("rspauth="+strings.Repeat("0", 32)))
	f.Add(uint8(0), []byte(`nonce="x"`))
	f.Add(uint8(1), []byte(`rspauth="unterminated`))
	f.Add(uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, qopIdx uint8, final []byte) {
		qop := qops[int(qopIdx)%len(qops)]
		c := NewDigestMD5("u", "p", "", "default", []string{qop}, fixedReader(1))
		if _, _, err := c.Step([]byte(challenge)); err != nil {
			t.Fatalf("valid challenge refused: %v", err)
		}
		_, done, err := c.Step(final)
		if err != nil {
			if done || c.Complete() || c.SecurityLayer() != nil {
				t.Fatalf("failed final step left done=%v complete=%v layer=%v", done, c.Complete(), c.SecurityLayer())
			}
			if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("error wraps neither ErrProtocol nor ErrAuthFailed: %v", err)
			}
		} else {
			if !done || !c.Complete() || c.QOP() != qop {
				t.Fatalf("accepted final step: done=%v complete=%v qop=%q, want %q", done, c.Complete(), c.QOP(), qop)
			}
			if (c.SecurityLayer() == nil) != (qop == QOPAuth) {
				t.Fatalf("qop %s with layer %v", qop, c.SecurityLayer())
			}
			// Only the server's proof is accepted: the first rspauth.
			dirs, perr := ParseDirectives(final)
			if perr != nil {
				t.Fatalf("accepted a final message that does not parse: %v", perr)
			}
			want := DigestResponse("u", "default", "p", "n0nce", cnonce, "00000001", qop, "/default", "", false)
			for _, d := range dirs {
				if d.Key == "rspauth" {
					if strings.ToLower(d.Value) != want {
						t.Fatalf("accepted rspauth %q, want %q", d.Value, want)
					}
					break
				}
			}
		}
		// The exchange is over either way.
		if _, _, err := c.Step(final); !errors.Is(err, ErrProtocol) {
			t.Fatalf("step after the final one: err = %v, want ErrProtocol", err)
		}
	})
}
