package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// Secret is a registry credential (a password or a bearer token), read
// when the client is created. It never prints its value: String, every fmt
// verb and slog show only where it comes from, e.g.
// "secret(env:SR_PASSWORD)".
type Secret struct {
	from string
	load func() (string, error)
}

// SecretFromEnv reads the secret from the environment variable name.
func SecretFromEnv(name string) Secret {
	return Secret{from: "env:" + name, load: func() (string, error) {
		v := os.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set or empty", name)
		}
		return v, nil
	}}
}

// SecretFromFile reads the secret from a file; one trailing newline is
// removed.
func SecretFromFile(path string) Secret {
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

// IsZero reports whether no secret was configured.
func (s Secret) IsZero() bool { return s.load == nil }

func (s Secret) reveal() (string, error) {
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

// GoString is String.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue keeps the value out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }
