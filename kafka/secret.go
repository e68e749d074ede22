package kafka

import "github.com/sluice/sluice/secret"

// Secret is a password or other credential (package secret), read when a
// client connects, so a rotated file is picked up by the next client. It
// never prints its value: String, %v, %+v, %#v and slog all show only
// where it comes from, e.g. "secret(env:KAFKA_PASSWORD)".
type Secret = secret.Secret

// SecretFromEnv reads the secret from the environment variable name.
func SecretFromEnv(name string) Secret { return secret.FromEnv(name) }

// SecretFromFile reads the secret from a file; one trailing newline (\n or
// \r\n) is removed.
func SecretFromFile(path string) Secret { return secret.FromFile(path) }

// SecretValue is a secret the program already holds (from its own vault
// client, say). Prefer SecretFromFile or SecretFromEnv.
func SecretValue(v string) Secret { return secret.Value(v) }
