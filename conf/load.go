package conf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Where configuration files are looked for.
const (
	// EnvConfDir names the environment variable holding the directory of
	// config.yaml, as FLINK_CONF_DIR does for Flink.
	EnvConfDir = "SLUICE_CONF_DIR"
	// FileName is the name of the configuration file in that directory.
	FileName = "config.yaml"
)

// ReadFile reads and parses the config file at path (see ParseYAML).
func ReadFile(path string) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conf: read config file: %w", err)
	}
	return ParseYAML(path, data)
}

// ParseDynamicProperty splits a dynamic property, the argument of a -D
// command-line flag, into key and value: "key=value", or "-Dkey=value" with
// the flag still attached. The value is everything after the first '=' and
// may be empty; key and value are trimmed of surrounding spaces.
func ParseDynamicProperty(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(s), "-D"), "=")
	k = strings.TrimSpace(k)
	switch {
	case !ok:
		return "", "", &ValueError{Type: "dynamic property", Value: s, Reason: "expected key=value"}
	case k == "":
		return "", "", &ValueError{Type: "dynamic property", Value: s, Reason: "empty key; expected key=value"}
	case strings.ContainsAny(k, " \t\r\n"):
		return "", "", &ValueError{Type: "dynamic property", Value: s, Reason: "the key contains white space; expected key=value"}
	}
	return k, strings.TrimSpace(v), nil
}

// FromDynamicProperties returns the configuration set by dynamic properties
// (-D key=value), each attributed to SourceDynamic. A key given twice takes
// the later value. A malformed property is kept as a problem that Validate
// reports.
func FromDynamicProperties(props []string) *Configuration {
	c := &Configuration{entries: make(map[string]entry, len(props))}
	src := Source{Name: SourceDynamic}
	for _, p := range props {
		k, v, err := ParseDynamicProperty(p)
		if err != nil {
			c.problems = append(c.problems, Problem{Value: p, Source: src, Reason: err.Error(), Err: err})
			continue
		}
		c.put(k, valueOf(v), src)
	}
	return c
}

// Sources names where Load reads settings from.
type Sources struct {
	// File is the config file to read. If empty, ConfDir/config.yaml is read
	// when ConfDir is set, and no file otherwise.
	File string
	// ConfDir is the directory of config.yaml, usually os.Getenv(EnvConfDir).
	ConfDir string
	// Dynamic are the dynamic properties from the command line, "key=value".
	Dynamic []string
}

// Load builds the configuration of a process: option defaults, overridden by
// the config file, overridden by dynamic properties. It validates the result
// and returns every problem at once as a *ValidationError, along with the
// warnings; an unreadable file or one that is not YAML is an error of its own.
func Load(src Sources) (*Configuration, []Warning, error) {
	path := src.File
	if path == "" && src.ConfDir != "" {
		path = filepath.Join(src.ConfDir, FileName)
	}
	file := New()
	if path != "" {
		var err error
		if file, err = ReadFile(path); err != nil {
			return nil, nil, err
		}
	}
	c := file.Merge(FromDynamicProperties(src.Dynamic))
	warnings, err := c.Validate()
	if err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}
