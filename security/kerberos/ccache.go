package kerberos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Times are a ticket's validity times.
type Times struct {
	Auth, Start, End, RenewTill time.Time
}

// Lifetime is End - Start.
func (t Times) Lifetime() time.Duration { return t.End.Sub(t.Start) }

// tgtCred is a TGT as a ticket cache holds it: the only credential a Login
// keeps.
type tgtCred struct {
	client types.PrincipalName
	realm  string
	// ticket is the DER encoding of the TGT.
	ticket []byte
	key    types.EncryptionKey
	times  Times
	// flags are the ticket flags' four bytes (RFC 4120 TicketFlags).
	flags []byte
}

func (c *tgtCred) principal() string { return c.client.PrincipalNameString() + "@" + c.realm }

// encodeCCache encodes c as an MIT credential cache, file format version 4
// (big-endian, no header fields), holding the one TGT.
func encodeCCache(c *tgtCred) []byte {
	var b []byte
	u16 := func(v uint16) { b = binary.BigEndian.AppendUint16(b, v) }
	u32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	data := func(d []byte) { u32(uint32(len(d))); b = append(b, d...) }
	principal := func(realm string, p types.PrincipalName) {
		u32(uint32(p.NameType))
		u32(uint32(len(p.NameString)))
		data([]byte(realm))
		for _, s := range p.NameString {
			data([]byte(s))
		}
	}
	ts := func(t time.Time) {
		if t.IsZero() {
			u32(0)
			return
		}
		u32(uint32(t.Unix()))
	}
	u16(0x0504)
	u16(0) // header length: no header fields
	principal(c.realm, c.client)
	// The credential.
	principal(c.realm, c.client)
	principal(c.realm, types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", c.realm}})
	u16(uint16(c.key.KeyType))
	data(c.key.KeyValue)
	ts(c.times.Auth)
	ts(c.times.Start)
	ts(c.times.End)
	ts(c.times.RenewTill)
	b = append(b, 0) // is_skey
	var flags [4]byte
	copy(flags[:], c.flags)
	b = append(b, flags[:]...)
	u32(0) // addresses
	u32(0) // authdata
	data(c.ticket)
	data(nil) // second ticket
	return b
}

// WriteTicketCache writes the login's current TGT to path as an MIT ticket
// cache (FILE type, format version 4, mode 0600), the file a process given
// KRB5CCNAME=FILE:path logs in from. It is written to a temporary file and
// renamed into place.
func (l *Login) WriteTicketCache(path string) error {
	s, err := l.current()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".krb5cc-*")
	if err != nil {
		return fmt.Errorf("kerberos: writing ticket cache %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(encodeCCache(s.cred)); err != nil {
		tmp.Close()
		return fmt.Errorf("kerberos: writing ticket cache %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("kerberos: writing ticket cache %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("kerberos: writing ticket cache %s: %w", path, err)
	}
	return nil
}

// cacheTime normalises a time read from a cache: UTC, and 0 (absent) as
// the zero time.
func cacheTime(t time.Time) time.Time {
	if t.Unix() == 0 {
		return time.Time{}
	}
	return t.UTC()
}

// ccReader decodes the big-endian fields of a ticket cache with bounds
// checks: a corrupt file gives an error, never a panic or a huge
// allocation.
type ccReader struct {
	b   []byte
	off int
	err error
}

func (r *ccReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("ticket cache offset %d: "+format, append([]any{r.off}, a...)...)
	}
}

func (r *ccReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%d bytes wanted, %d left", n, len(r.b)-r.off)
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *ccReader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *ccReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *ccReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *ccReader) data() []byte { return r.take(int(r.u32())) }

// count reads an element count, each element at least min bytes.
func (r *ccReader) count(min int) int {
	n := int(r.u32())
	if r.err == nil && n > (len(r.b)-r.off)/min {
		r.fail("count %d exceeds what is left", n)
		return 0
	}
	return n
}

func (r *ccReader) principal(version uint16) (realm string, p types.PrincipalName) {
	if version != 0x0501 {
		p.NameType = int32(r.u32())
	}
	n := r.count(4)
	if version == 0x0501 {
		n-- // the count includes the realm
	}
	realm = string(r.data())
	for i := 0; i < n && r.err == nil; i++ {
		p.NameString = append(p.NameString, string(r.data()))
	}
	return realm, p
}

// decodeCCacheTGT reads an MIT ticket cache (FILE format version 3 or 4)
// and returns the TGT of its default principal for its own realm, or
// ok=false if it holds none.
func decodeCCacheTGT(b []byte) (cred *tgtCred, ok bool, err error) {
	r := &ccReader{b: b}
	version := r.u16()
	if r.err == nil && version != 0x0503 && version != 0x0504 {
		return nil, false, fmt.Errorf("ticket cache version %#04x: only versions 3 and 4 (0x0503, 0x0504) are read", version)
	}
	if version == 0x0504 {
		r.take(int(r.u16())) // header fields (KDC time offset): not needed
	}
	realm, client := r.principal(version)
	for r.err == nil && r.off < len(r.b) {
		crealm, cname := r.principal(version)
		srealm, sname := r.principal(version)
		key := types.EncryptionKey{KeyType: int32(r.u16())}
		if version == 0x0503 {
			r.u16()
		}
		key.KeyValue = r.data()
		var t [4]time.Time
		for i := range t {
			t[i] = cacheTime(time.Unix(int64(r.u32()), 0))
		}
		r.u8() // is_skey
		flags := r.take(4)
		for n := r.count(6); n > 0 && r.err == nil; n-- {
			r.u16()
			r.data()
		}
		for n := r.count(6); n > 0 && r.err == nil; n-- {
			r.u16()
			r.data()
		}
		ticket := r.data()
		r.data() // second ticket
		if r.err != nil {
			break
		}
		if crealm == realm && cname.Equal(client) && srealm == realm &&
			len(sname.NameString) == 2 && sname.NameString[0] == "krbtgt" && sname.NameString[1] == realm {
			cred = &tgtCred{client: client, realm: realm, ticket: ticket, key: key,
				times: Times{Auth: t[0], Start: t[1], End: t[2], RenewTill: t[3]}, flags: append([]byte{}, flags...)}
		}
	}
	if r.err != nil {
		return nil, false, r.err
	}
	if len(client.NameString) == 0 || realm == "" {
		return nil, false, errors.New("ticket cache without a default principal")
	}
	if cred == nil {
		return nil, false, nil
	}
	if cred.times.Start.IsZero() {
		cred.times.Start = cred.times.Auth
	}
	return cred, true, nil
}
