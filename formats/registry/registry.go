// Package registry is the schema registry client of the formats (the
// Confluent Schema Registry API, as Confluent's registry, Apicurio's
// ccompat API and Redpanda serve it), on franz-go's pkg/sr, with its wire
// format and a cache.
//
// # Wire format
//
// A record is a magic byte 0, the schema id as a 4-byte big-endian integer,
// then the payload (for Protobuf, the message indexes come first); see
// AppendHeader and SplitHeader.
//
// # Writing and reading
//
// A writer either registers its schema under the subject (RegisterOnWrite,
// Confluent's auto.register.schemas=true, the default) or only looks up
// the id of a schema registered beforehand (LookupOnly, for registries
// where producers may not register). Either way the id is asked once per
// subject and schema and cached. A reader resolves each id it meets once
// and caches the schema: ids are immutable in a registry.
//
// The subject of a topic's values is "<topic>-value" (the
// TopicNameStrategy), unless a format is given a subject.
//
// Credentials come from files or the environment (Secret) and appear in no
// error, log or String.
package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice/sluice/formats"
)

// Schema types as the registry names them.
const (
	Avro       = sr.TypeAvro
	Protobuf   = sr.TypeProtobuf
	JSONSchema = sr.TypeJSON
)

// WriteMode says whether a writer registers its schema.
type WriteMode int

const (
	// RegisterOnWrite registers the writer's schema under its subject (a
	// schema already registered keeps its id). The default.
	RegisterOnWrite WriteMode = iota
	// LookupOnly looks up the id of a schema registered beforehand; a
	// schema that is not registered fails the record (formats.ErrUnknownSchema).
	LookupOnly
)

// Config configures a client. Flink's avro-confluent format names the same
// settings url, basic-auth.user-info, bearer-auth.token and
// ssl.truststore.location.
type Config struct {
	// URLs of the registry, e.g. "http://localhost:8081" (url). Required.
	URLs []string
	// BasicAuthUser and BasicAuthPassword log in with HTTP basic
	// authentication (basic-auth.user-info); both or neither.
	BasicAuthUser     string
	BasicAuthPassword Secret
	// BearerToken authenticates with a bearer token (bearer-auth.token);
	// not together with basic authentication.
	BearerToken Secret
	// CAFile is a PEM file of the certificate authorities to trust for
	// https URLs (default: the system's). CertFile and KeyFile are a client
	// certificate and its key (PEM; both or neither).
	CAFile, CertFile, KeyFile string
	// Timeout bounds each request to the registry. Default 10s.
	Timeout time.Duration
}

// ErrInvalidConfig: the Config is wrong.
var ErrInvalidConfig = errors.New("registry: invalid configuration")

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var p []string
	if len(c.URLs) == 0 {
		p = append(p, "no registry URL")
	}
	for _, u := range c.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			p = append(p, fmt.Sprintf("URL %q is not http:// or https://", u))
		}
	}
	if (c.BasicAuthUser == "") != c.BasicAuthPassword.IsZero() {
		p = append(p, "basic authentication needs both a user and a password")
	}
	if c.BasicAuthUser != "" && !c.BearerToken.IsZero() {
		p = append(p, "basic authentication and a bearer token are exclusive")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		p = append(p, "a client certificate needs both CertFile and KeyFile")
	}
	if c.Timeout < 0 {
		p = append(p, fmt.Sprintf("negative timeout %v", c.Timeout))
	}
	if len(p) > 0 {
		return fmt.Errorf("%w:\n  - %s", ErrInvalidConfig, strings.Join(p, "\n  - "))
	}
	return nil
}

// Client is a registry client with a cache. It is safe for concurrent use;
// one is shared by every format (and subtask) of a process that talks to
// the same registry.
type Client struct {
	cl      *sr.Client
	timeout time.Duration
	mu      struct {
		sync.RWMutex
		byID map[int]sr.Schema
		ids  map[idKey]int
	}
}

type idKey struct {
	subject, schema string
	typ             sr.SchemaType
	register        bool
}

// New returns a client of the registry at cfg.URLs. It does not connect.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URLs...), sr.UserAgent("sluice")}
	if cfg.BasicAuthUser != "" {
		pw, err := cfg.BasicAuthPassword.Reveal()
		if err != nil {
			return nil, fmt.Errorf("registry: basic authentication password: %w", err)
		}
		opts = append(opts, sr.BasicAuth(cfg.BasicAuthUser, pw))
	}
	if !cfg.BearerToken.IsZero() {
		tok, err := cfg.BearerToken.Reveal()
		if err != nil {
			return nil, fmt.Errorf("registry: bearer token: %w", err)
		}
		opts = append(opts, sr.BearerToken(tok))
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if cfg.CAFile != "" || cfg.CertFile != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CAFile != "" {
			pem, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return nil, fmt.Errorf("registry: reading CA file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("registry: CA file %s has no PEM certificate", cfg.CAFile)
			}
		}
		if cfg.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("registry: client certificate %s: %w", cfg.CertFile, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc}}))
	} else {
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: timeout}))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	c := &Client{cl: cl, timeout: timeout}
	c.mu.byID = map[int]sr.Schema{}
	c.mu.ids = map[idKey]int{}
	return c, nil
}

// SR is the underlying franz-go client, for administration (subjects,
// versions, modes) beyond what the formats need.
func (c *Client) SR() *sr.Client { return c.cl }

// SchemaByID returns the schema of id, from the cache or the registry. An
// id the registry does not have (404) is a *formats.Error of
// formats.ErrUnknownSchema; a registry that cannot be reached, fails (a
// 5xx) or refuses the client (401, 403) is one of formats.ErrUnavailable.
func (c *Client) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	c.mu.RLock()
	s, ok := c.mu.byID[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		e := &formats.Error{Format: "registry", Op: "lookup", SchemaID: id, Kind: formats.ErrUnknownSchema,
			Reason: "resolving the schema id: " + registryMessage(err), Err: err}
		var re *sr.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			// Unreachable, timed out, failing or refusing the client (401,
			// 403): the id may well exist.
			e.Kind = formats.ErrUnavailable
			e.Reason = "the schema registry could not be asked for the schema id: " + registryMessage(err)
		}
		return sr.Schema{}, e
	}
	c.mu.Lock()
	c.mu.byID[id] = s
	c.mu.Unlock()
	return s, nil
}

// ID returns the id of schema s under subject: registered there first with
// RegisterOnWrite, only looked up with LookupOnly. Cached per subject and
// schema. A schema the subject's compatibility rule refuses is a
// *formats.Error of formats.ErrIncompatible whose Reason is the registry's
// message.
func (c *Client) ID(ctx context.Context, subject string, s sr.Schema, mode WriteMode) (int, error) {
	key := idKey{subject, s.Schema, s.Type, mode == RegisterOnWrite}
	c.mu.RLock()
	id, ok := c.mu.ids[key]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var err error
	if mode == RegisterOnWrite {
		id, err = c.cl.RegisterSchema(ctx, subject, s, -1, -1)
	} else {
		var ss sr.SubjectSchema
		ss, err = c.cl.LookupSchema(ctx, subject, s)
		id = ss.ID
	}
	if err != nil {
		return 0, registrationError(subject, mode, err)
	}
	c.mu.Lock()
	c.mu.ids[key] = id
	c.mu.byID[id] = s
	c.mu.Unlock()
	return id, nil
}

// SetCompatibility sets the compatibility rule of subject: "BACKWARD",
// "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
// "FULL_TRANSITIVE" or "NONE".
func (c *Client) SetCompatibility(ctx context.Context, subject, level string) error {
	var l sr.CompatibilityLevel
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("%w: compatibility %q: %v", ErrInvalidConfig, level, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	for _, r := range c.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: l}, subject) {
		if r.Err != nil {
			return &formats.Error{Format: "registry", Op: "set compatibility", Subject: subject, Kind: formats.ErrRegistry,
				Reason: registryMessage(r.Err), Err: r.Err}
		}
	}
	return nil
}

func registrationError(subject string, mode WriteMode, err error) error {
	e := &formats.Error{Format: "registry", Op: "register", Subject: subject, Kind: formats.ErrRegistry, Err: err, Reason: registryMessage(err)}
	if mode == LookupOnly {
		e.Op = "lookup"
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.ErrorCode == sr.ErrIncompatibleSchema.Code || re.StatusCode == http.StatusConflict:
			e.Kind = formats.ErrIncompatible
		case mode == LookupOnly && re.StatusCode == http.StatusNotFound:
			e.Kind = formats.ErrUnknownSchema
			e.Reason = "the schema is not registered under the subject (LookupOnly): " + e.Reason
		}
	}
	return e
}

// registryMessage is the registry's own message for err.
func registryMessage(err error) string {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := re.Message
		if msg == "" {
			msg = strings.TrimSpace(string(re.Raw))
		}
		return fmt.Sprintf("%s (HTTP %d, error code %d)", msg, re.StatusCode, re.ErrorCode)
	}
	return err.Error()
}

// AppendHeader appends the wire format's header for id to b.
func AppendHeader(b []byte, id int) []byte {
	return binary.BigEndian.AppendUint32(append(b, 0), uint32(id))
}

// SplitHeader returns the schema id of a record in the wire format and its
// payload. A record without the header is a *formats.Error of
// formats.ErrNoMagicByte (formats.ErrNoValue for no bytes at all).
func SplitHeader(format string, b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, &formats.Error{Format: format, Op: "decode", Kind: formats.ErrNoValue, Reason: "record has no value"}
	}
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, &formats.Error{Format: format, Op: "decode", Kind: formats.ErrNoMagicByte,
			Reason: fmt.Sprintf("not in the schema registry's wire format (%d bytes, first byte not the magic byte 0 with a 4-byte schema id)", len(b))}
	}
	return int(binary.BigEndian.Uint32(b[1:5])), b[5:], nil
}

// Subject is the subject of topic's values under the TopicNameStrategy
// ("<topic>-value"), or subject when it is not empty.
func Subject(topic, subject string) string {
	if subject != "" {
		return subject
	}
	return topic + "-value"
}
