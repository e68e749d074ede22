package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	iofs "io/fs"
	"strconv"

	"github.com/sluice/sluice/fs"
)

// MetadataFileName is the name of the file whose presence marks a
// checkpoint or savepoint complete. It is written last, atomically.
const MetadataFileName = "_metadata"

// The metadata file format (all integers big-endian):
//
//	offset  size  field
//	0       8     magic "SLUICECK"
//	8       2     format version (1)
//	10      1     kind (1 checkpoint, 2 savepoint)
//	11      1     reserved, 0
//	12      8     body length in bytes
//	20      4     CRC-32C of bytes 8..20 and of the body
//	24      ...   body:
//	                checkpoint ID  int64
//	                shared count   uvarint, then per shared handle:
//	                               uvarint length, bytes
//	                payload        the rest (opaque to this package)
const (
	magic         = "SLUICECK"
	formatVersion = 1
	headerSize    = 24
	// MaxMetadataSize bounds the body of a metadata file (1 GiB).
	MaxMetadataSize = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind says whether metadata describes a checkpoint or a savepoint.
type Kind uint8

// Kinds of metadata.
const (
	KindCheckpoint Kind = 1
	KindSavepoint  Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindCheckpoint:
		return "checkpoint"
	case KindSavepoint:
		return "savepoint"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Metadata is the content of a _metadata file.
type Metadata struct {
	Kind         Kind
	CheckpointID int64
	// Shared lists the handles of the shared files (incremental state) the
	// checkpoint uses, so that retention knows which shared files a
	// retained checkpoint still needs. Empty for savepoints, which are
	// self-contained.
	Shared []string
	// Payload is the caller's description of the snapshot (opaque here).
	Payload []byte
}

// MarshalBinary encodes m in the metadata file format.
func (m *Metadata) MarshalBinary() ([]byte, error) {
	if m.Kind != KindCheckpoint && m.Kind != KindSavepoint {
		return nil, fmt.Errorf("checkpoint storage: encoding metadata: unknown kind %d", m.Kind)
	}
	size := 8 + binary.MaxVarintLen64 + len(m.Payload)
	for _, h := range m.Shared {
		if h == "" {
			return nil, fmt.Errorf("%w: encoding metadata: an empty shared handle", ErrBadName)
		}
		size += binary.MaxVarintLen64 + len(h)
	}
	buf := make([]byte, headerSize, headerSize+size)
	buf = binary.BigEndian.AppendUint64(buf, uint64(m.CheckpointID))
	buf = binary.AppendUvarint(buf, uint64(len(m.Shared)))
	for _, h := range m.Shared {
		buf = binary.AppendUvarint(buf, uint64(len(h)))
		buf = append(buf, h...)
	}
	buf = append(buf, m.Payload...)
	body := len(buf) - headerSize
	if body > MaxMetadataSize {
		return nil, fmt.Errorf("checkpoint storage: encoding metadata: %d bytes, more than the limit of %d", body, MaxMetadataSize)
	}
	copy(buf, magic)
	binary.BigEndian.PutUint16(buf[8:], formatVersion)
	buf[10] = byte(m.Kind)
	buf[11] = 0
	binary.BigEndian.PutUint64(buf[12:], uint64(body))
	crc := crc32.Update(crc32.Checksum(buf[8:20], castagnoli), castagnoli, buf[headerSize:])
	binary.BigEndian.PutUint32(buf[20:], crc)
	return buf, nil
}

// DecodeMetadata decodes a metadata file's content; path names the file in
// errors, which are *CorruptError.
func DecodeMetadata(path string, data []byte) (*Metadata, error) {
	if len(data) < headerSize {
		return nil, corrupt(path, "truncated: %d bytes, the header alone takes %d", len(data), headerSize)
	}
	body, err := checkHeader(path, data[:headerSize])
	if err != nil {
		return nil, err
	}
	if got := uint64(len(data) - headerSize); got != body {
		if got < body {
			return nil, corrupt(path, "truncated: the header announces %d bytes of body, the file holds %d", body, got)
		}
		return nil, corrupt(path, "%d bytes of trailing garbage after the %d-byte body", got-body, body)
	}
	return decodeBody(path, data[:headerSize], data[headerSize:])
}

// checkHeader validates the fixed header and returns the body length.
func checkHeader(path string, h []byte) (uint64, error) {
	if string(h[:8]) != magic {
		return 0, corrupt(path, "not a Sluice metadata file (it starts with %q, want %q)", h[:8], magic)
	}
	if v := binary.BigEndian.Uint16(h[8:]); v != formatVersion {
		return 0, corrupt(path, "format version %d; this version of Sluice reads version %d", v, formatVersion)
	}
	if k := Kind(h[10]); k != KindCheckpoint && k != KindSavepoint {
		return 0, corrupt(path, "unknown kind %d", h[10])
	}
	if h[11] != 0 {
		return 0, corrupt(path, "reserved header byte is %d, want 0", h[11])
	}
	body := binary.BigEndian.Uint64(h[12:])
	if body > MaxMetadataSize {
		return 0, corrupt(path, "the header announces %d bytes of body, more than the limit of %d", body, MaxMetadataSize)
	}
	return body, nil
}

func decodeBody(path string, h, body []byte) (*Metadata, error) {
	crc := crc32.Update(crc32.Checksum(h[8:20], castagnoli), castagnoli, body)
	if want := binary.BigEndian.Uint32(h[20:]); crc != want {
		return nil, corrupt(path, "checksum mismatch (CRC-32C %08x, header says %08x)", crc, want)
	}
	// The checksum matched: what follows only fails for a file written by a
	// faulty encoder, but is checked all the same.
	m := &Metadata{Kind: Kind(h[10])}
	if len(body) < 8 {
		return nil, corrupt(path, "body of %d bytes has no checkpoint ID", len(body))
	}
	m.CheckpointID = int64(binary.BigEndian.Uint64(body))
	rest := body[8:]
	n, k := binary.Uvarint(rest)
	if k <= 0 {
		return nil, corrupt(path, "bad count of shared handles")
	}
	rest = rest[k:]
	if n > uint64(len(rest)) { // each handle takes at least one byte
		return nil, corrupt(path, "%d shared handles announced in %d bytes", n, len(rest))
	}
	if n > 0 {
		m.Shared = make([]string, 0, n)
	}
	for i := range n {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l == 0 || l > uint64(len(rest)-k) {
			return nil, corrupt(path, "shared handle %d of %d overruns the body", i+1, n)
		}
		m.Shared = append(m.Shared, string(rest[k:k+int(l)]))
		rest = rest[k+int(l):]
	}
	m.Payload = rest
	return m, nil
}

func corrupt(path, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// ReadMetadata reads and decodes the metadata file at metaPath. A missing
// file gives an error wrapping ErrIncomplete (and fs.ErrNotExist); a
// damaged one a *CorruptError naming it.
func ReadMetadata(fsys fs.FileSystem, metaPath string) (*Metadata, error) {
	r, err := fsys.Open(metaPath)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", ErrIncomplete, err)
		}
		return nil, fmt.Errorf("checkpoint storage: reading metadata: %w", err)
	}
	defer r.Close()
	var h [headerSize]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, corrupt(metaPath, "truncated: %d bytes, the header alone takes %d", n, headerSize)
		}
		return nil, fmt.Errorf("checkpoint storage: reading metadata %s: %w", metaPath, err)
	}
	size, err := checkHeader(metaPath, h[:])
	if err != nil {
		return nil, err
	}
	// Read at most one byte more than announced, growing the buffer as data
	// arrives rather than trusting the header with one large allocation.
	body, err := io.ReadAll(io.LimitReader(r, int64(size)+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint storage: reading metadata %s: %w", metaPath, err)
	}
	switch got := uint64(len(body)); {
	case got < size:
		return nil, corrupt(metaPath, "truncated: the header announces %d bytes of body, the file holds %d", size, got)
	case got > size:
		return nil, corrupt(metaPath, "trailing garbage after the %d-byte body", size)
	}
	return decodeBody(metaPath, h[:], body)
}
