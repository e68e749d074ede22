package restapi

import (
	"bytes"
	"fmt"
	"os"

	"github.com/sluice/sluice/conf"
)

// TokenFromConf reads the REST token of security.rest.token-file: nil when
// the key is unset. A missing, unreadable or empty file is an error naming
// the key and the file.
func TokenFromConf(c *conf.Configuration) ([]byte, error) {
	path := conf.Get(c, conf.RESTTokenFile)
	if path == "" {
		return nil, nil
	}
	return ReadToken(path)
}

// ReadToken reads a token file: its content without surrounding white
// space, which must not be empty.
func ReadToken(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rest: reading the REST token (%s): %w", conf.RESTTokenFile.Key(), err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("rest: the REST token file %s (%s) is empty", path, conf.RESTTokenFile.Key())
	}
	return b, nil
}
