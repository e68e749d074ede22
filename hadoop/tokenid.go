package hadoop

import (
	"errors"
	"fmt"
	"time"
)

// DelegationTokenIdentifier is what a delegation token's identifier says
// (Hadoop's AbstractDelegationTokenIdentifier, shared by HDFS and YARN
// delegation tokens).
type DelegationTokenIdentifier struct {
	Owner, Renewer, RealUser string
	IssueDate, MaxDate       time.Time
	SequenceNumber           int
	MasterKeyID              int
}

// ErrBadTokenIdentifier is wrapped when a token identifier does not decode.
var ErrBadTokenIdentifier = errors.New("hadoop: malformed delegation token identifier")

// ParseDelegationTokenIdentifier decodes the Writable form of a delegation
// token identifier: version byte 0, owner, renewer and real user as Text,
// issue and max dates (epoch ms) as VLongs, sequence number and master key
// id as VInts. Trailing bytes (fields of subclasses) are ignored.
func ParseDelegationTokenIdentifier(id []byte) (DelegationTokenIdentifier, error) {
	var d DelegationTokenIdentifier
	if len(id) == 0 {
		return d, fmt.Errorf("%w: empty", ErrBadTokenIdentifier)
	}
	if id[0] != 0 {
		return d, fmt.Errorf("%w: version %d, want 0", ErrBadTokenIdentifier, id[0])
	}
	r := &writableReader{b: id, off: 1}
	var err error
	fail := func(err error) (DelegationTokenIdentifier, error) {
		return DelegationTokenIdentifier{}, fmt.Errorf("%w: %w", ErrBadTokenIdentifier, err)
	}
	if d.Owner, err = r.text("owner"); err != nil {
		return fail(err)
	}
	if d.Renewer, err = r.text("renewer"); err != nil {
		return fail(err)
	}
	if d.RealUser, err = r.text("real user"); err != nil {
		return fail(err)
	}
	for _, f := range []struct {
		what string
		t    *time.Time
	}{{"issue date", &d.IssueDate}, {"max date", &d.MaxDate}} {
		v, n, err := readVLong(r.b[r.off:])
		if err != nil {
			return fail(fmt.Errorf("%s at offset %d: %w", f.what, r.off, err))
		}
		r.off += n
		*f.t = time.UnixMilli(v)
	}
	if d.SequenceNumber, err = r.vint("sequence number"); err != nil {
		return fail(err)
	}
	if d.MasterKeyID, err = r.vint("master key id"); err != nil {
		return fail(err)
	}
	return d, nil
}

// AppendDelegationTokenIdentifier encodes d as ParseDelegationTokenIdentifier
// reads it (for tests and fakes of token-issuing servers).
func AppendDelegationTokenIdentifier(b []byte, d DelegationTokenIdentifier) []byte {
	b = append(b, 0)
	b = appendText(b, d.Owner)
	b = appendText(b, d.Renewer)
	b = appendText(b, d.RealUser)
	b = appendVLong(b, d.IssueDate.UnixMilli())
	b = appendVLong(b, d.MaxDate.UnixMilli())
	b = appendVLong(b, int64(d.SequenceNumber))
	return appendVLong(b, int64(d.MasterKeyID))
}
