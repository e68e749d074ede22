package ipc

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

func TestConnectionHeader(t *testing.T) {
	if got := connectionHeader(false); !bytes.Equal(got, []byte("hrpc\x09\x00\x00")) {
		t.Errorf("plain header = % x", got)
	}
	if got := connectionHeader(true); !bytes.Equal(got, []byte("hrpc\x09\x00\xdf")) {
		t.Errorf("SASL header = % x", got)
	}
}

func TestRequestFrameLayout(t *testing.T) {
	clientID := bytes.Repeat([]byte{0xab}, 16)
	f, err := frame(requestHeader(-33, clientID, -1), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()})
	if err != nil {
		t.Fatal(err)
	}
	// Hand-assembled: rpcKind=2, rpcOp=0, callId=zigzag(-33)=65, clientId, retryCount=zigzag(-1)=1.
	hdr := append([]byte{0x08, 0x02, 0x10, 0x00, 0x18, 0x41, 0x22, 0x10}, clientID...)
	hdr = append(hdr, 0x28, 0x01)
	body := []byte{0x10, 0x01}
	want := []byte{0, 0, 0, byte(1 + len(hdr) + 1 + len(body)), byte(len(hdr))}
	want = append(want, hdr...)
	want = append(want, byte(len(body)))
	want = append(want, body...)
	if !bytes.Equal(f, want) {
		t.Fatalf("frame = % x\nwant    % x", f, want)
	}
	h, rest, err := parseRequest(f[4:])
	if err != nil || h.GetCallId() != -33 || len(rest) != 3 {
		t.Fatalf("parseRequest = %v, %d bytes, %v", h, len(rest), err)
	}
}

func TestParseResponse(t *testing.T) {
	// A SASL response as Java writes it: callId -33 as uint32.
	h := &commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(0xffffffdf), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}
	f, err := frame(h, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseResponse(f[4:])
	if err != nil {
		t.Fatal(err)
	}
	if r.callID() != -33 || len(r.body) != 2 {
		t.Fatalf("callID %d, body % x", r.callID(), r.body)
	}
	// Java may also encode a negative int in a uint32 field as a 10-byte
	// sign-extended varint.
	long := []byte{0x08, 0xdf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x00}
	r, err = parseResponse(append([]byte{byte(len(long))}, long...))
	if err != nil || r.callID() != -33 {
		t.Fatalf("sign-extended call id: %v, %v", r, err)
	}
	for _, bad := range [][]byte{
		{},
		{0x05, 0x08},                         // header longer than frame
		{0x02, 0x08, 0x01},                   // no status
		{0x04, 0x08, 0x01, 0x10, 0x00, 0x09}, // body length beyond frame
	} {
		if _, err := parseResponse(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseResponse(% x) err = %v, want ErrMalformed", bad, err)
		}
	}
}

func FuzzParseResponse(f *testing.F) {
	ok, _ := frame(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(7), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}, &commonpb.TokenProto{Kind: proto.String("k")})
	f.Add(ok[4:])
	errf, _ := frame(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(7), Status: commonpb.RpcResponseHeaderProto_ERROR.Enum(),
		ExceptionClassName: proto.String("java.io.IOException"), ErrorMsg: proto.String("x"), ErrorDetail: commonpb.RpcResponseHeaderProto_ERROR_APPLICATION.Enum()})
	f.Add(errf[4:])
	f.Add([]byte{0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseResponse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if r.header.CallId == nil || r.header.Status == nil {
			t.Fatal("accepted a header without callId/status")
		}
		_ = remoteError(r.header, "m").Error()
		var m commonpb.RpcSaslProto
		_ = proto.Unmarshal(r.body, &m)
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 1, 2})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := readFrame(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		if len(b) > 1<<16 || len(b)+4 > len(data) {
			t.Fatalf("frame of %d bytes from %d bytes of input", len(b), len(data))
		}
	})
}
