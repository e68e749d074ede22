// Package secret holds credentials (passwords, tokens) for the connectors
// that need them, Kafka's SASL and the schema registry's authentication,
// so that none of them is printed: String, every fmt verb and slog show
// only where a Secret comes from, e.g. "secret(env:KAFKA_PASSWORD)".
package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// Secret is a credential, read when a client is set up (so a rotated file
// is picked up by the next client). The zero Secret is none configured.
type Secret struct {
	// from describes the source for messages; it never holds the value.
	from string
	// load reads the value. A literal value lives only in this closure,
	// so formatting a struct that holds a Secret in an unexported field
	// (which fmt prints field by field) shows a function address.
	load func() (string, error)
}

// FromEnv reads the secret from the environment variable name.
func FromEnv(name string) Secret {
	return Secret{from: "env:" + name, load: func() (string, error) {
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		if v == "" {
			return "", fmt.Errorf("environment variable %s is empty", name)
		}
		return v, nil
	}}
}

// FromFile reads the secret from a file; one trailing newline (\n or
// \r\n) is removed.
func FromFile(path string) Secret {
	return Secret{from: "file:" + path, load: func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("reading secret file: %w", err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", path)
		}
		return v, nil
	}}
}

// Value is a secret the program already holds (from its own vault client,
// say). Prefer FromFile or FromEnv.
func Value(v string) Secret {
	return Secret{from: "value", load: func() (string, error) {
		if v == "" {
			return "", errors.New("empty secret value")
		}
		return v, nil
	}}
}

// IsZero reports whether no secret was configured.
func (s Secret) IsZero() bool { return s.load == nil }

// Reveal returns the secret's value; its error names the source, never
// the value. Only a client's setup calls it.
func (s Secret) Reveal() (string, error) {
	if s.load == nil {
		return "", errors.New("no secret configured")
	}
	v, err := s.load()
	if err != nil {
		return "", fmt.Errorf("%s: %w", s, err)
	}
	return v, nil
}

// String shows where the secret comes from, never its value.
func (s Secret) String() string {
	if s.load == nil {
		return "secret(none)"
	}
	return "secret(" + s.from + ")"
}

// GoString is String, so %#v does not print the fields.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue keeps the value out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
