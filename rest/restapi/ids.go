package restapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// IDs on the REST API (job, vertex, trigger and TaskManager resource IDs)
// are, as in Flink, 32 lower-case hexadecimal characters.

// NewID returns a random ID of 32 hexadecimal characters, for job and
// trigger IDs.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// DeriveID returns a stable ID of 32 hexadecimal characters hashed from
// parts, e.g. a vertex ID from the job ID and the head operator's ID, so
// that the same vertex keeps its ID across requests.
func DeriveID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ParseID returns s in the canonical lower-case form if it is an ID: 32
// hexadecimal characters of either case.
func ParseID(s string) (string, bool) {
	id := strings.ToLower(s)
	return id, ValidID(id)
}

// ValidID reports whether s is 32 lower-case hexadecimal characters.
func ValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ExternalPath is a savepoint's or checkpoint's path as Flink's REST API
// reports it, so that what a user copies from it can be given back (run
// -s): a local absolute path with the file: scheme, as Flink's Path prints
// it ("file:/var/savepoints/savepoint-…"), any other path or URI
// (hdfs://namenode:8020/…) as it is.
func ExternalPath(p string) string {
	if strings.HasPrefix(p, "/") {
		return "file:" + p
	}
	return p
}
