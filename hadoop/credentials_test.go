package hadoop

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"
)

func TestVLongKnownEncodings(t *testing.T) {
	// Values worked out by hand from WritableUtils.writeVLong's definition.
	tests := []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{-112, []byte{0x90}},
		{128, []byte{0x8f, 0x80}},
		{300, []byte{0x8e, 0x01, 0x2c}},
		{-113, []byte{0x87, 0x70}},
		{-256, []byte{0x87, 0xff}},
		{-257, []byte{0x86, 0x01, 0x00}},
		{math.MaxInt64, []byte{0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tt := range tests {
		got := appendVLong(nil, tt.v)
		if !bytes.Equal(got, tt.want) {
			t.Errorf("appendVLong(%d) = % x, want % x", tt.v, got, tt.want)
		}
		v, n, err := readVLong(tt.want)
		if err != nil || v != tt.v || n != len(tt.want) {
			t.Errorf("readVLong(% x) = %d, %d, %v; want %d, %d", tt.want, v, n, err, tt.v, len(tt.want))
		}
	}
	if _, _, err := readVLong([]byte{0x8e, 0x01}); !errors.Is(err, errShort) {
		t.Errorf("short vlong: err = %v", err)
	}
}

func sampleCredentials() *Credentials {
	var c Credentials
	c.AddToken("amrm", &Token{Identifier: []byte{1, 2, 3, 0xff}, Password: []byte("pw"), Kind: KindAMRMToken, Service: "rm:8030"})
	c.AddToken("hdfs", &Token{Identifier: bytes.Repeat([]byte{7}, 300), Password: []byte{}, Kind: KindHDFSDelegation, Service: "ha-hdfs:ns"})
	c.AddSecret("key", []byte("s3cr3t"))
	return &c
}

func TestCredentialsWritableBytes(t *testing.T) {
	// A document built by hand from Credentials.write's layout.
	var c Credentials
	c.AddToken("a", &Token{Identifier: []byte{9}, Password: []byte{8, 7}, Kind: "K", Service: "S"})
	c.AddSecret("s", []byte{5})
	want := []byte{
		'H', 'D', 'T', 'S', 0,
		1,      // one token
		1, 'a', // alias
		1, 9, // identifier
		2, 8, 7, // password
		1, 'K', // kind
		1, 'S', // service
		1, // one secret
		1, 's', 1, 5,
	}
	got, err := c.Marshal(FormatWritable)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal = % x\nwant      % x", got, want)
	}
}

func TestCredentialsProtobufBytes(t *testing.T) {
	// A document built by hand from the CredentialsProto wire format.
	var c Credentials
	c.AddToken("a", &Token{Identifier: []byte{9}, Password: []byte{8}, Kind: "K", Service: "S"})
	c.AddSecret("s", []byte{5})
	token := []byte{0x0a, 1, 9, 0x12, 1, 8, 0x1a, 1, 'K', 0x22, 1, 'S'}
	kv1 := append([]byte{0x0a, 1, 'a', 0x12, byte(len(token))}, token...)
	kv2 := []byte{0x0a, 1, 's', 0x1a, 1, 5}
	body := append(append([]byte{0x0a, byte(len(kv1))}, kv1...), append([]byte{0x12, byte(len(kv2))}, kv2...)...)
	want := append([]byte{'H', 'D', 'T', 'S', 1, byte(len(body))}, body...)
	got, err := c.Marshal(FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal = % x\nwant      % x", got, want)
	}
	back, err := ParseCredentials(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, &c) {
		t.Fatalf("round trip: %+v, want %+v", back, &c)
	}
}

func TestCredentialsRoundTrip(t *testing.T) {
	for _, format := range []CredentialsFormat{FormatWritable, FormatProtobuf} {
		t.Run(format.String(), func(t *testing.T) {
			c := sampleCredentials()
			path := filepath.Join(t.TempDir(), "tokens")
			if err := c.WriteTokenFile(path, format); err != nil {
				t.Fatal(err)
			}
			back, err := ReadTokenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
			}
			tok, ok := back.TokenByKind(KindAMRMToken)
			if !ok || tok.Service != "rm:8030" {
				t.Fatalf("TokenByKind = %v, %v", tok, ok)
			}
			if got := tok.SASLUsername(); got != "AQID/w==" {
				t.Errorf("SASLUsername = %q", got)
			}
			if got := tok.SASLPassword(); got != "cHc=" {
				t.Errorf("SASLPassword = %q", got)
			}
		})
	}
}

func TestParseCredentialsErrors(t *testing.T) {
	good, err := sampleCredentials().Marshal(FormatWritable)
	if err != nil {
		t.Fatal(err)
	}
	goodProto, err := sampleCredentials().Marshal(FormatProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"bad magic", append([]byte("HDTX"), good[4:]...)},
		{"bad version", append([]byte("HDTS\x07"), good[5:]...)},
		{"truncated writable", good[:len(good)-3]},
		{"trailing writable", append(append([]byte(nil), good...), 0)},
		{"negative count", []byte("HDTS\x00\x87\x70")},
		{"huge count", []byte("HDTS\x00\x8c\x7f\xff\xff\xff")},
		{"truncated proto", goodProto[:len(goodProto)-2]},
		{"trailing proto", append(append([]byte(nil), goodProto...), 0)},
		{"token entry without token", []byte("HDTS\x01\x05\x0a\x03\x0a\x01a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCredentials(tt.data)
			if !errors.Is(err, ErrBadTokenStorage) {
				t.Fatalf("err = %v, want ErrBadTokenStorage", err)
			}
		})
	}
}

func FuzzParseCredentials(f *testing.F) {
	for _, format := range []CredentialsFormat{FormatWritable, FormatProtobuf} {
		b, err := sampleCredentials().Marshal(format)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("HDTS\x00\x00\x00"))
	f.Add([]byte("HDTS\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCredentials(data)
		if err != nil {
			if !errors.Is(err, ErrBadTokenStorage) {
				t.Fatalf("error does not wrap ErrBadTokenStorage: %v", err)
			}
			return
		}
		// Whatever parses must re-encode and parse back to the same value.
		for _, format := range []CredentialsFormat{FormatWritable, FormatProtobuf} {
			enc, err := c.Marshal(format)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseCredentials(enc)
			if err != nil {
				t.Fatalf("re-encoded %s does not parse: %v", format, err)
			}
			if !reflect.DeepEqual(normalize(back), normalize(c)) {
				t.Fatalf("%s round trip changed the credentials", format)
			}
		}
	})
}

// normalize maps nil and empty byte slices together (proto decoding does not
// keep the difference).
func normalize(c *Credentials) map[string]string {
	m := map[string]string{}
	for _, a := range c.TokenAliases() {
		t, _ := c.Token(a)
		m["t:"+a] = string(t.Identifier) + "\x00" + string(t.Password) + "\x00" + t.Kind + "\x00" + t.Service
	}
	for _, a := range c.SecretAliases() {
		s, _ := c.Secret(a)
		m["s:"+a] = string(s)
	}
	return m
}

func FuzzReadVLong(f *testing.F) {
	for _, v := range []int64{0, -1, 127, 128, -113, 1 << 40, math.MinInt64, math.MaxInt64} {
		f.Add(appendVLong(nil, v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, n, err := readVLong(data)
		if err != nil {
			return
		}
		if n < 1 || n > len(data) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		v2, n2, err := readVLong(appendVLong(nil, v))
		if err != nil || v2 != v || n2 > n {
			t.Fatalf("re-encoding %d: got %d (%d bytes), %v", v, v2, n2, err)
		}
	})
}

func TestRemoteErrorIs(t *testing.T) {
	err := error(&RemoteError{Class: string(ErrAuthorization), Message: "User x is not authorized\n\tat stack", Method: "getApplications"})
	if !errors.Is(err, ErrAuthorization) || !errors.Is(err, ErrAccessControl) {
		t.Error("AuthorizationException must match itself and AccessControlException")
	}
	if errors.Is(err, ErrStandby) {
		t.Error("matched an unrelated class")
	}
	if got, want := err.Error(), "hadoop: getApplications: remote AuthorizationException: User x is not authorized"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var re *RemoteError
	if !errors.As(err, &re) || re.Class != string(ErrAuthorization) {
		t.Error("errors.As failed")
	}
	if ErrInvalidToken.Short() != "InvalidToken" {
		t.Errorf("Short = %q", ErrInvalidToken.Short())
	}
}
