package registry

import "github.com/sluice/sluice/secret"

// Secret is a registry credential (a password or a bearer token; package
// secret), read when the client is created. It never prints its value:
// String, every fmt verb and slog show only where it comes from, e.g.
// "secret(env:SR_PASSWORD)".
type Secret = secret.Secret

// SecretFromEnv reads the secret from the environment variable name.
func SecretFromEnv(name string) Secret { return secret.FromEnv(name) }

// SecretFromFile reads the secret from a file; one trailing newline is
// removed.
func SecretFromFile(path string) Secret { return secret.FromFile(path) }
