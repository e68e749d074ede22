package ipc

import (
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/sasl"
)

// With a SASL security layer (integrity or privacy), the byte stream of
// frames a connection would carry travels in pieces, each wrapped by the
// layer and sent as the token of an RpcSaslProto WRAP message in a frame of
// its own under call id -33 (Hadoop's SaslRpcClient WrappedOutputStream and
// WrappedInputStream). A piece may hold part of a frame or several frames.

// newFrameWriter returns where frames are written: w itself without a
// layer, else a writer that wraps.
func newFrameWriter(w io.Writer, layer sasl.SecurityLayer, clientID []byte) io.Writer {
	if layer == nil {
		return w
	}
	return &wrapWriter{w: w, layer: layer, clientID: clientID}
}

type wrapWriter struct {
	w        io.Writer
	layer    sasl.SecurityLayer
	clientID []byte
}

// Write wraps p in pieces of at most the layer's MaxWrap bytes. It is not
// safe for concurrent use (the connection serialises writes).
func (ww *wrapWriter) Write(p []byte) (int, error) {
	max := ww.layer.MaxWrap()
	n := 0
	for n < len(p) {
		piece := p[n:min(len(p), n+max)]
		tok, err := ww.layer.Wrap(piece)
		if err != nil {
			return n, fmt.Errorf("ipc: wrapping a frame: %w", err)
		}
		f, err := frame(requestHeader(callIDSASL, ww.clientID, -1), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_WRAP.Enum(), Token: tok})
		if err != nil {
			return n, err
		}
		if _, err := ww.w.Write(f); err != nil {
			return n, err
		}
		n += len(piece)
	}
	return n, nil
}

// newFrameReader returns where frames are read from: r itself without a
// layer, else a reader of the unwrapped stream.
func newFrameReader(r io.Reader, layer sasl.SecurityLayer, maxFrame int) io.Reader {
	if layer == nil {
		return r
	}
	return &unwrapReader{r: r, layer: layer, max: maxFrame}
}

type unwrapReader struct {
	r     io.Reader
	layer sasl.SecurityLayer
	max   int
	buf   []byte
}

func (ur *unwrapReader) Read(p []byte) (int, error) {
	for len(ur.buf) == 0 {
		f, err := readFrame(ur.r, ur.max)
		if err != nil {
			return 0, err
		}
		tok, err := parseWrapped(f)
		if err != nil {
			return 0, err
		}
		if ur.buf, err = ur.layer.Unwrap(tok); err != nil {
			return 0, fmt.Errorf("ipc: unwrapping a frame: %w", err)
		}
	}
	n := copy(p, ur.buf)
	ur.buf = ur.buf[n:]
	return n, nil
}

// parseWrapped decodes a frame of the wrapped stream: a response header
// under call id -33 and an RpcSaslProto WRAP message; it returns the token.
// A fatal error header (the server refusing the connection) becomes a
// *hadoop.RemoteError.
func parseWrapped(f []byte) ([]byte, error) {
	r, err := parseResponse(f)
	if err != nil {
		return nil, err
	}
	if r.header.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		return nil, remoteError(r.header, "")
	}
	if r.callID() != callIDSASL {
		return nil, fmt.Errorf("%w: expected a wrapped frame (call id -33) on a connection with a security layer, got call id %d", ErrMalformed, r.callID())
	}
	m := &commonpb.RpcSaslProto{}
	if err := proto.Unmarshal(r.body, m); err != nil {
		return nil, fmt.Errorf("%w: wrapped frame: %v", ErrMalformed, err)
	}
	if m.GetState() != commonpb.RpcSaslProto_WRAP {
		return nil, fmt.Errorf("%w: wrapped frame in SASL state %v, want WRAP", ErrMalformed, m.GetState())
	}
	return m.GetToken(), nil
}
