package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
)

// Hadoop IPC constants (protocol version 9).
const (
	rpcVersion       = 9
	serviceClass     = 0
	authProtocolNone = 0
	authProtocolSASL = 0xDF // -33 as a signed byte

	callIDConnectionContext int32 = -3
	callIDPing              int32 = -4
	callIDSASL              int32 = -33

	// ClientProtocolVersion is the RPC version of every YARN protocol.
	clientProtocolVersion = 1
)

// connectionHeader is the 7 bytes that open every connection.
func connectionHeader(sasl bool) []byte {
	auth := byte(authProtocolNone)
	if sasl {
		auth = authProtocolSASL
	}
	return []byte{'h', 'r', 'p', 'c', rpcVersion, serviceClass, auth}
}

// ErrMalformed is wrapped by errors about frames that cannot be decoded.
var ErrMalformed = errors.New("ipc: malformed message")

// appendDelimited appends m preceded by its varint length.
func appendDelimited(b []byte, m proto.Message) ([]byte, error) {
	size := proto.Size(m)
	b = protowire.AppendVarint(b, uint64(size))
	return proto.MarshalOptions{}.MarshalAppend(b, m)
}

// frame builds a length-prefixed frame from varint-delimited messages.
func frame(msgs ...proto.Message) ([]byte, error) {
	b := make([]byte, 4, 128)
	var err error
	for _, m := range msgs {
		if b, err = appendDelimited(b, m); err != nil {
			return nil, fmt.Errorf("ipc: encoding %T: %w", m, err)
		}
	}
	binary.BigEndian.PutUint32(b[:4], uint32(len(b)-4))
	return b, nil
}

// readFrame reads one length-prefixed frame, refusing frames over max.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: frame of %d bytes exceeds the %d byte limit", ErrMalformed, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// consumeDelimited splits one varint-delimited message off b.
func consumeDelimited(b []byte) (msg, rest []byte, err error) {
	size, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return nil, nil, fmt.Errorf("%w: bad length prefix: %v", ErrMalformed, protowire.ParseError(n))
	}
	if size > uint64(len(b)-n) {
		return nil, nil, fmt.Errorf("%w: message length %d exceeds the %d bytes left in the frame", ErrMalformed, size, len(b)-n)
	}
	return b[n : n+int(size)], b[n+int(size):], nil
}

// response is a decoded server frame.
type response struct {
	header *commonpb.RpcResponseHeaderProto
	body   []byte // the delimited payload's bytes (nil if none)
}

// parseResponse decodes a response frame: a delimited RpcResponseHeaderProto
// then, for successful calls, one delimited response message.
func parseResponse(f []byte) (*response, error) {
	hb, rest, err := consumeDelimited(f)
	if err != nil {
		return nil, fmt.Errorf("response header: %w", err)
	}
	h := &commonpb.RpcResponseHeaderProto{}
	if err := proto.Unmarshal(hb, h); err != nil {
		return nil, fmt.Errorf("%w: response header: %v", ErrMalformed, err)
	}
	if h.CallId == nil || h.Status == nil {
		return nil, fmt.Errorf("%w: response header lacks callId or status", ErrMalformed)
	}
	r := &response{header: h}
	if len(rest) > 0 {
		body, tail, err := consumeDelimited(rest)
		if err != nil {
			return nil, fmt.Errorf("response body: %w", err)
		}
		if len(tail) != 0 {
			return nil, fmt.Errorf("%w: %d trailing bytes after the response body", ErrMalformed, len(tail))
		}
		r.body = body
	}
	return r, nil
}

// parseRequest decodes a request frame as a server sees it: the delimited
// RpcRequestHeaderProto and the remaining bytes. Used by the fake server and
// by fuzz tests of the framing.
func parseRequest(f []byte) (*commonpb.RpcRequestHeaderProto, []byte, error) {
	hb, rest, err := consumeDelimited(f)
	if err != nil {
		return nil, nil, fmt.Errorf("request header: %w", err)
	}
	h := &commonpb.RpcRequestHeaderProto{}
	if err := proto.Unmarshal(hb, h); err != nil {
		return nil, nil, fmt.Errorf("%w: request header: %v", ErrMalformed, err)
	}
	if h.CallId == nil {
		return nil, nil, fmt.Errorf("%w: request header lacks callId", ErrMalformed)
	}
	return h, rest, nil
}

// callID reads the response's call id as the signed value the client sent
// (the field is uint32 on the wire in responses, sint32 in requests).
func (r *response) callID() int32 { return int32(r.header.GetCallId()) }

func requestHeader(callID int32, clientID []byte, retry int32) *commonpb.RpcRequestHeaderProto {
	return &commonpb.RpcRequestHeaderProto{
		RpcKind:    commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:      commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:     proto.Int32(callID),
		ClientId:   clientID,
		RetryCount: proto.Int32(retry),
	}
}
