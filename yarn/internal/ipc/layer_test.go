package ipc

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

// xorLayer is a stand-in security layer: it flips bits and tags each piece,
// so a piece that is not unwrapped, or unwrapped twice, is noticed.
type xorLayer struct{ max int }

func (l xorLayer) Wrap(p []byte) ([]byte, error) {
	out := []byte{0xAA}
	for _, b := range p {
		out = append(out, b^0x5c)
	}
	return out, nil
}

func (l xorLayer) Unwrap(p []byte) ([]byte, error) {
	if len(p) == 0 || p[0] != 0xAA {
		return nil, errors.New("not wrapped")
	}
	out := make([]byte, 0, len(p)-1)
	for _, b := range p[1:] {
		out = append(out, b^0x5c)
	}
	return out, nil
}

func (l xorLayer) MaxWrap() int { return l.max }

// wrappedResponses is what a server sends for stream under a layer: pieces
// of at most max bytes, each a response frame under call id -33.
func wrappedResponses(t *testing.T, l xorLayer, stream []byte) []byte {
	t.Helper()
	var out []byte
	for len(stream) > 0 {
		n := min(len(stream), l.max)
		tok, _ := l.Wrap(stream[:n])
		stream = stream[n:]
		f, err := frame(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(uint32(0xFFFFFFDF)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()},
			&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_WRAP.Enum(), Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f...)
	}
	return out
}

func TestWrappedStreamRoundTrip(t *testing.T) {
	l := xorLayer{max: 7}
	var frames [][]byte
	var stream []byte
	for i, size := range []int{0, 3, 40, 6} {
		f, err := frame(requestHeader(int32(i), make([]byte, 16), -1), &commonpb.RpcSaslProto{Token: bytes.Repeat([]byte{byte(i)}, size)})
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		stream = append(stream, f...)
	}

	// Client to server: every piece is a SASL WRAP request of at most MaxWrap bytes.
	var wire bytes.Buffer
	w := newFrameWriter(&wire, l, make([]byte, 16))
	for _, f := range frames {
		if _, err := w.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	for wire.Len() > 0 {
		outer, err := readFrame(&wire, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		h, rest, err := parseRequest(outer)
		if err != nil {
			t.Fatal(err)
		}
		if h.GetCallId() != callIDSASL {
			t.Fatalf("wrapped piece under call id %d", h.GetCallId())
		}
		body, _, err := consumeDelimited(rest)
		if err != nil {
			t.Fatal(err)
		}
		var m commonpb.RpcSaslProto
		if err := proto.Unmarshal(body, &m); err != nil || m.GetState() != commonpb.RpcSaslProto_WRAP {
			t.Fatalf("piece %v, %v", &m, err)
		}
		p, err := l.Unwrap(m.GetToken())
		if err != nil {
			t.Fatal(err)
		}
		if len(p) > l.max {
			t.Fatalf("a piece of %d bytes exceeds MaxWrap %d", len(p), l.max)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, stream) {
		t.Fatal("the unwrapped pieces are not the frames written")
	}

	// Server to client: frames spanning pieces are reassembled.
	r := newFrameReader(bytes.NewReader(wrappedResponses(t, l, stream)), l, 1<<20)
	for i, want := range frames {
		f, err := readFrame(r, 1<<20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(f, want[4:]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if _, err := readFrame(r, 1<<20); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func FuzzParseWrapped(f *testing.F) {
	l := xorLayer{max: 5}
	w := wrappedResponses(&testing.T{}, l, []byte("0123456789"))
	f.Add(w[4:])
	f.Add([]byte{2, 8, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := parseWrapped(b)
		if err == nil && len(tok) > len(b) {
			t.Fatalf("token of %d bytes from a %d-byte frame", len(tok), len(b))
		}
	})
}
