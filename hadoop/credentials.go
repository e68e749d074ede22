package hadoop

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop/internal/credpb"
)

// ErrBadTokenStorage is wrapped by every error about a malformed Hadoop
// token storage ("HDTS") document.
var ErrBadTokenStorage = errors.New("hadoop: bad token storage")

// Token kinds Sluice handles.
const (
	KindAMRMToken       = "YARN_AM_RM_TOKEN"
	KindNMToken         = "NMToken"
	KindContainerToken  = "ContainerToken"
	KindHDFSDelegation  = "HDFS_DELEGATION_TOKEN"
	KindRMDelegation    = "RM_DELEGATION_TOKEN"
	KindClientToAMToken = "YARN_CLIENT_TOKEN"
)

// EnvTokenFile is the environment variable YARN sets in every container to
// the path of the container's token storage file.
const EnvTokenFile = "HADOOP_TOKEN_FILE_LOCATION"

// maxTokenStorage bounds how much of a token storage document is read.
const maxTokenStorage = 64 << 20

// tokenStorageMagic opens every token storage document.
var tokenStorageMagic = [4]byte{'H', 'D', 'T', 'S'}

// Token is a Hadoop security token: an opaque identifier, the password the
// issuing service derived from it, its kind (e.g. YARN_AM_RM_TOKEN) and the
// service it is for (usually host:port).
type Token struct {
	Identifier []byte
	Password   []byte
	Kind       string
	Service    string
}

// String describes the token without revealing its password.
func (t *Token) String() string {
	if t == nil {
		return "<nil token>"
	}
	return fmt.Sprintf("token{kind=%q service=%q identifier=%d bytes}", t.Kind, t.Service, len(t.Identifier))
}

// Clone returns a deep copy.
func (t *Token) Clone() *Token {
	if t == nil {
		return nil
	}
	return &Token{
		Identifier: bytes.Clone(t.Identifier),
		Password:   bytes.Clone(t.Password),
		Kind:       t.Kind,
		Service:    t.Service,
	}
}

// SASLUsername is the DIGEST-MD5 user name Hadoop derives from the token:
// the identifier in standard base64.
func (t *Token) SASLUsername() string { return base64.StdEncoding.EncodeToString(t.Identifier) }

// SASLPassword is the DIGEST-MD5 password Hadoop derives from the token: the
// password in standard base64.
func (t *Token) SASLPassword() string { return base64.StdEncoding.EncodeToString(t.Password) }

// CredentialsFormat is the serialized format of a token storage document,
// the byte after the "HDTS" magic.
type CredentialsFormat byte

// Token storage formats.
const (
	// FormatWritable is Hadoop's original Writable layout (version 0), still
	// the default Hadoop writes.
	FormatWritable CredentialsFormat = 0
	// FormatProtobuf is the protobuf layout (version 1).
	FormatProtobuf CredentialsFormat = 1
)

func (f CredentialsFormat) String() string {
	switch f {
	case FormatWritable:
		return "writable"
	case FormatProtobuf:
		return "protobuf"
	}
	return fmt.Sprintf("format(%d)", byte(f))
}

// Credentials is a set of tokens and secret keys, each under an alias:
// Hadoop's Credentials. The zero value is empty and ready to use.
type Credentials struct {
	tokens  map[string]*Token
	secrets map[string][]byte
}

// AddToken stores t (copied) under alias, replacing any token there.
func (c *Credentials) AddToken(alias string, t *Token) {
	if c.tokens == nil {
		c.tokens = make(map[string]*Token)
	}
	c.tokens[alias] = t.Clone()
}

// Token returns the token stored under alias.
func (c *Credentials) Token(alias string) (*Token, bool) {
	t, ok := c.tokens[alias]
	return t.Clone(), ok
}

// TokenByKind returns the first token (by alias order) of the given kind.
func (c *Credentials) TokenByKind(kind string) (*Token, bool) {
	for _, a := range c.TokenAliases() {
		if t := c.tokens[a]; t.Kind == kind {
			return t.Clone(), true
		}
	}
	return nil, false
}

// TokenAliases returns the aliases of all tokens, sorted.
func (c *Credentials) TokenAliases() []string { return sortedKeys(c.tokens) }

// NumTokens is the number of tokens.
func (c *Credentials) NumTokens() int { return len(c.tokens) }

// RemoveToken deletes the token under alias.
func (c *Credentials) RemoveToken(alias string) { delete(c.tokens, alias) }

// AddSecret stores a secret key (copied) under alias.
func (c *Credentials) AddSecret(alias string, key []byte) {
	if c.secrets == nil {
		c.secrets = make(map[string][]byte)
	}
	c.secrets[alias] = bytes.Clone(key)
}

// Secret returns the secret key stored under alias.
func (c *Credentials) Secret(alias string) ([]byte, bool) {
	k, ok := c.secrets[alias]
	return bytes.Clone(k), ok
}

// SecretAliases returns the aliases of all secret keys, sorted.
func (c *Credentials) SecretAliases() []string { return sortedKeys(c.secrets) }

// Merge adds every token and secret of other, overwriting same aliases.
func (c *Credentials) Merge(other *Credentials) {
	for a, t := range other.tokens {
		c.AddToken(a, t)
	}
	for a, k := range other.secrets {
		c.AddSecret(a, k)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ReadTokenFile reads a token storage file, such as the one
// $HADOOP_TOKEN_FILE_LOCATION names inside a YARN container.
func ReadTokenFile(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hadoop: reading token file: %w", err)
	}
	defer f.Close()
	c, err := ReadCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// WriteTokenFile writes c to path (mode 0600) in the given format.
func (c *Credentials) WriteTokenFile(path string, format CredentialsFormat) error {
	data, err := c.Marshal(format)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("hadoop: writing token file: %w", err)
	}
	return nil
}

// ReadCredentials reads a whole token storage document from r.
func ReadCredentials(r io.Reader) (*Credentials, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTokenStorage+1))
	if err != nil {
		return nil, fmt.Errorf("hadoop: reading token storage: %w", err)
	}
	if len(data) > maxTokenStorage {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrBadTokenStorage, maxTokenStorage)
	}
	return ParseCredentials(data)
}

// ParseCredentials decodes a token storage document: "HDTS", a format byte,
// then the body in that format. Both of Hadoop's formats are accepted.
// Trailing bytes after the body are an error.
func ParseCredentials(data []byte) (*Credentials, error) {
	if len(data) < 5 {
		return nil, fmt.Errorf("%w: %d bytes, too short for the HDTS header", ErrBadTokenStorage, len(data))
	}
	if !bytes.Equal(data[:4], tokenStorageMagic[:]) {
		return nil, fmt.Errorf("%w: header is %q, want %q", ErrBadTokenStorage, data[:4], tokenStorageMagic[:])
	}
	var (
		c   *Credentials
		err error
	)
	switch f := CredentialsFormat(data[4]); f {
	case FormatWritable:
		c, err = parseWritableCredentials(data[5:])
	case FormatProtobuf:
		c, err = parseProtoCredentials(data[5:])
	default:
		return nil, fmt.Errorf("%w: unknown format version %d (want 0 or 1)", ErrBadTokenStorage, data[4])
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%s format): %v", ErrBadTokenStorage, CredentialsFormat(data[4]), err)
	}
	return c, nil
}

// parseWritableCredentials decodes Hadoop's Credentials.write layout: VInt
// token count, then (Text alias, Token) pairs, VInt secret count, then
// (Text alias, VInt length, bytes) triples. Offsets in errors count from the
// byte after the format byte.
func parseWritableCredentials(b []byte) (*Credentials, error) {
	r := &writableReader{b: b}
	c := &Credentials{}
	n, err := r.vint("token count")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > r.remaining() {
		return nil, fmt.Errorf("token count %d is impossible with %d bytes left", n, r.remaining())
	}
	for i := range n {
		alias, err := r.text(fmt.Sprintf("token #%d alias", i+1))
		if err != nil {
			return nil, err
		}
		var t Token
		if t.Identifier, err = r.bytes(fmt.Sprintf("token %q identifier", alias)); err != nil {
			return nil, err
		}
		if t.Password, err = r.bytes(fmt.Sprintf("token %q password", alias)); err != nil {
			return nil, err
		}
		if t.Kind, err = r.text(fmt.Sprintf("token %q kind", alias)); err != nil {
			return nil, err
		}
		if t.Service, err = r.text(fmt.Sprintf("token %q service", alias)); err != nil {
			return nil, err
		}
		c.AddToken(alias, &t)
	}
	n, err = r.vint("secret count")
	if err != nil {
		return nil, err
	}
	if n < 0 || n > r.remaining() {
		return nil, fmt.Errorf("secret count %d is impossible with %d bytes left", n, r.remaining())
	}
	for i := range n {
		alias, err := r.text(fmt.Sprintf("secret #%d alias", i+1))
		if err != nil {
			return nil, err
		}
		key, err := r.bytes(fmt.Sprintf("secret %q", alias))
		if err != nil {
			return nil, err
		}
		c.AddSecret(alias, key)
	}
	if r.remaining() != 0 {
		return nil, fmt.Errorf("%d trailing bytes at offset %d", r.remaining(), r.off)
	}
	return c, nil
}

// parseProtoCredentials decodes a varint-delimited CredentialsProto.
func parseProtoCredentials(b []byte) (*Credentials, error) {
	size, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return nil, fmt.Errorf("message length: %v", protowire.ParseError(n))
	}
	if size > uint64(len(b)-n) {
		return nil, fmt.Errorf("message length is %d but only %d bytes follow", size, len(b)-n)
	}
	if rest := len(b) - n - int(size); rest != 0 {
		return nil, fmt.Errorf("%d trailing bytes after the message", rest)
	}
	var m credpb.CredentialsProto
	if err := proto.Unmarshal(b[n:n+int(size)], &m); err != nil {
		return nil, err
	}
	c := &Credentials{}
	for i, kv := range m.GetTokens() {
		if kv.Token == nil {
			return nil, fmt.Errorf("token entry #%d (alias %q) has no token", i+1, kv.GetAlias())
		}
		c.AddToken(string(kv.GetAlias()), &Token{
			Identifier: kv.Token.GetIdentifier(),
			Password:   kv.Token.GetPassword(),
			Kind:       kv.Token.GetKind(),
			Service:    kv.Token.GetService(),
		})
	}
	for _, kv := range m.GetSecrets() {
		c.AddSecret(string(kv.GetAlias()), kv.GetSecret())
	}
	return c, nil
}

// Marshal encodes c as a token storage document in the given format.
// Entries are written in alias order, so equal credentials encode equally.
func (c *Credentials) Marshal(format CredentialsFormat) ([]byte, error) {
	out := append([]byte(nil), tokenStorageMagic[:]...)
	out = append(out, byte(format))
	switch format {
	case FormatWritable:
		out = appendVLong(out, int64(len(c.tokens)))
		for _, a := range c.TokenAliases() {
			t := c.tokens[a]
			out = appendText(out, a)
			out = appendWritableBytes(out, t.Identifier)
			out = appendWritableBytes(out, t.Password)
			out = appendText(out, t.Kind)
			out = appendText(out, t.Service)
		}
		out = appendVLong(out, int64(len(c.secrets)))
		for _, a := range c.SecretAliases() {
			out = appendText(out, a)
			out = appendWritableBytes(out, c.secrets[a])
		}
		return out, nil
	case FormatProtobuf:
		var m credpb.CredentialsProto
		for _, a := range c.TokenAliases() {
			t := c.tokens[a]
			m.Tokens = append(m.Tokens, &credpb.CredentialsKVProto{
				Alias: []byte(a),
				Token: &credpb.TokenProto{
					Identifier: nonNil(t.Identifier),
					Password:   nonNil(t.Password),
					Kind:       proto.String(t.Kind),
					Service:    proto.String(t.Service),
				},
			})
		}
		for _, a := range c.SecretAliases() {
			m.Secrets = append(m.Secrets, &credpb.CredentialsKVProto{Alias: []byte(a), Secret: nonNil(c.secrets[a])})
		}
		body, err := proto.MarshalOptions{Deterministic: true}.Marshal(&m)
		if err != nil {
			return nil, fmt.Errorf("hadoop: encoding credentials: %w", err)
		}
		out = protowire.AppendVarint(out, uint64(len(body)))
		return append(out, body...), nil
	}
	return nil, fmt.Errorf("hadoop: cannot write token storage format %d (want 0 or 1)", byte(format))
}

// nonNil makes a proto2 bytes field present even when empty (Hadoop declares
// these fields required).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
