package kerberos

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jcmturner/gokrb5/v8/credentials"
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

// credFromCCache finds the TGT of the cache's default principal.
func credFromCCache(cc *credentials.CCache) (*tgtCred, bool) {
	realm := cc.GetClientRealm()
	e, ok := cc.GetEntry(types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", realm}})
	if !ok {
		return nil, false
	}
	return &tgtCred{
		client: cc.GetClientPrincipalName(),
		realm:  realm,
		ticket: e.Ticket,
		key:    e.Key,
		times:  Times{Auth: cacheTime(e.AuthTime), Start: cacheTime(e.StartTime), End: cacheTime(e.EndTime), RenewTill: cacheTime(e.RenewTill)},
		flags:  e.TicketFlags.Bytes,
	}, true
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
