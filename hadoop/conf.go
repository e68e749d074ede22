package hadoop

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrBadConfig is wrapped by every error about a malformed configuration
// resource or value.
var ErrBadConfig = errors.New("hadoop: bad configuration")

// maxSubstitutionDepth bounds ${var} expansion, as Hadoop does (20 rounds).
const maxSubstitutionDepth = 20

// The site files read from a configuration directory, in load order: a
// property in a later file overrides one in an earlier file unless the
// earlier one is final.
var siteFiles = [...]string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml"}

// Configuration is a set of Hadoop configuration properties, layered like
// Hadoop's: built-in defaults first, then each added resource in order. A
// property marked <final>true</final> cannot be overridden by a later
// resource. Values are expanded on read: ${name} is replaced by the value of
// property name, ${env.NAME} by the environment variable NAME.
//
// A Configuration is not safe for concurrent modification; concurrent reads
// are safe once loading is done.
type Configuration struct {
	props   map[string]property
	getenv  func(string) string
	sources []string
}

type property struct {
	value  string
	final  bool
	source string
}

// builtinDefaults are the values Hadoop's *-default.xml give the keys Sluice
// reads, so that an empty configuration behaves like a stock Hadoop client.
var builtinDefaults = map[string]string{
	"fs.defaultFS":                             "file:///",
	"hadoop.security.authentication":           "simple",
	"hadoop.rpc.protection":                    "authentication",
	"yarn.resourcemanager.hostname":            "0.0.0.0",
	"yarn.resourcemanager.address":             "${yarn.resourcemanager.hostname}:8032",
	"yarn.resourcemanager.scheduler.address":   "${yarn.resourcemanager.hostname}:8030",
	"yarn.resourcemanager.webapp.address":      "${yarn.resourcemanager.hostname}:8088",
	"yarn.resourcemanager.ha.enabled":          "false",
	"yarn.resourcemanager.connect.max-wait.ms": "900000",
}

// NewConfiguration returns a configuration holding only Hadoop's defaults for
// the keys Sluice uses. getenv resolves ${env.NAME} references; nil means no
// environment (such references stay unexpanded).
func NewConfiguration(getenv func(string) string) *Configuration {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := &Configuration{props: make(map[string]property, 64), getenv: getenv}
	for k, v := range builtinDefaults {
		c.props[k] = property{value: v, source: SourceDefaults}
	}
	return c
}

// SourceDefaults is the Source of a key that only Hadoop's built-in
// defaults set.
const SourceDefaults = "built-in defaults"

// LoadFromEnvironment builds a configuration from the site files
// (core-site.xml, hdfs-site.xml, yarn-site.xml) found in the directories
// named by the environment: HADOOP_CONF_DIR, then YARN_CONF_DIR (whose files
// override). When neither is set, $HADOOP_HOME/etc/hadoop is used if it
// exists. getenv is usually os.Getenv. A named directory that does not exist
// is an error; a site file missing from an existing directory is not.
func LoadFromEnvironment(getenv func(string) string) (*Configuration, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var dirs []string
	for _, v := range []string{"HADOOP_CONF_DIR", "YARN_CONF_DIR"} {
		if d := strings.TrimSpace(getenv(v)); d != "" {
			if !containsString(dirs, d) {
				dirs = append(dirs, d)
			}
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("%w: %s=%q is not a readable directory", ErrBadConfig, v, d)
			}
		}
	}
	if len(dirs) == 0 {
		if home := strings.TrimSpace(getenv("HADOOP_HOME")); home != "" {
			d := filepath.Join(home, "etc", "hadoop")
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	c := NewConfiguration(getenv)
	for _, d := range dirs {
		if err := c.AddDir(d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AddDir adds the site files present in dir, in the order core-site.xml,
// hdfs-site.xml, yarn-site.xml.
func (c *Configuration) AddDir(dir string) error {
	for _, name := range siteFiles {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("hadoop: reading configuration: %w", err)
		}
		err = c.AddResource(p, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// AddFile adds one configuration XML file.
func (c *Configuration) AddFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hadoop: reading configuration: %w", err)
	}
	defer f.Close()
	return c.AddResource(path, f)
}

// xmlConfiguration is Hadoop's configuration file layout. Properties may
// carry name/value/final as child elements or as attributes.
type xmlConfiguration struct {
	XMLName    xml.Name      `xml:"configuration"`
	Properties []xmlProperty `xml:"property"`
}

type xmlProperty struct {
	Name      string `xml:"name"`
	Value     string `xml:"value"`
	Final     string `xml:"final"`
	AttrName  string `xml:"name,attr"`
	AttrValue string `xml:"value,attr"`
	AttrFinal string `xml:"final,attr"`
}

// AddResource parses one Hadoop configuration XML document read from r. name
// identifies the resource in errors. Later resources override earlier ones,
// except for properties an earlier resource declared final.
func (c *Configuration) AddResource(name string, r io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return fmt.Errorf("hadoop: reading configuration %s: %w", name, err)
	}
	parsed, err := parseConfigurationXML(data)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadConfig, name, err)
	}
	for i, p := range parsed {
		key := strings.TrimSpace(p.Name)
		if key == "" {
			return fmt.Errorf("%w: %s: property #%d has no name", ErrBadConfig, name, i+1)
		}
		final, err := parseFinal(p.Final)
		if err != nil {
			return fmt.Errorf("%w: %s: property %q: %v", ErrBadConfig, name, key, err)
		}
		if old, ok := c.props[key]; ok && old.final {
			continue // Hadoop ignores attempts to override a final property.
		}
		c.props[key] = property{value: p.Value, final: final, source: name}
	}
	c.sources = append(c.sources, name)
	return nil
}

type parsedProperty struct{ Name, Value, Final string }

func parseConfigurationXML(data []byte) ([]parsedProperty, error) {
	var doc xmlConfiguration
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := make([]parsedProperty, 0, len(doc.Properties))
	for _, p := range doc.Properties {
		pp := parsedProperty{Name: p.Name, Value: p.Value, Final: p.Final}
		if pp.Name == "" {
			pp.Name = p.AttrName
		}
		if pp.Value == "" {
			pp.Value = p.AttrValue
		}
		if pp.Final == "" {
			pp.Final = p.AttrFinal
		}
		out = append(out, pp)
	}
	return out, nil
}

func parseFinal(s string) (bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("<final> is %q, want true or false", s)
	}
	return b, nil
}

// Set sets a property, as if from a last, programmatic resource. It does not
// override a final property and reports whether the value was taken.
func (c *Configuration) Set(key, value string) bool {
	if old, ok := c.props[key]; ok && old.final {
		return false
	}
	c.props[key] = property{value: value, source: "programmatic"}
	return true
}

// Raw returns the unexpanded value of key and whether it is set.
func (c *Configuration) Raw(key string) (string, bool) {
	p, ok := c.props[key]
	return p.value, ok
}

// Source names the resource that set key ("" if unset).
func (c *Configuration) Source(key string) string { return c.props[key].source }

// IsFinal reports whether key was declared final.
func (c *Configuration) IsFinal(key string) bool { return c.props[key].final }

// Keys returns every set key, sorted.
func (c *Configuration) Keys() []string {
	keys := make([]string, 0, len(c.props))
	for k := range c.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Lookup returns the expanded value of key and whether it is set. The error
// reports a substitution that does not terminate (a ${var} cycle).
func (c *Configuration) Lookup(key string) (string, bool, error) {
	p, ok := c.props[key]
	if !ok {
		return "", false, nil
	}
	v, err := c.expand(key, p.value)
	return v, true, err
}

// Get returns the expanded, trimmed value of key, or def when key is unset,
// blank, or its expansion fails.
func (c *Configuration) Get(key, def string) string {
	v, ok, err := c.Lookup(key)
	v = strings.TrimSpace(v)
	if !ok || err != nil || v == "" {
		return def
	}
	return v
}

// Bool returns key as a boolean, def when unset. A value that is not a
// boolean is an error naming the key.
func (c *Configuration) Bool(key string, def bool) (bool, error) {
	v, ok, err := c.Lookup(key)
	if err != nil {
		return def, err
	}
	v = strings.TrimSpace(v)
	if !ok || v == "" {
		return def, nil
	}
	b, perr := strconv.ParseBool(strings.ToLower(v))
	if perr != nil {
		return def, fmt.Errorf("%w: %s=%q (from %s) is not true or false", ErrBadConfig, key, v, c.Source(key))
	}
	return b, nil
}

// Strings returns key as a comma-separated list with blanks trimmed and empty
// elements dropped (Hadoop's getTrimmedStrings).
func (c *Configuration) Strings(key string) ([]string, error) {
	v, ok, err := c.Lookup(key)
	if err != nil || !ok {
		return nil, err
	}
	return splitTrimmed(v), nil
}

func splitTrimmed(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// expand performs Hadoop's variable substitution: repeatedly replace the
// first ${name} whose value is known, up to maxSubstitutionDepth rounds.
// References to unknown names are left in place, as Hadoop does.
func (c *Configuration) expand(key, value string) (string, error) {
	for range maxSubstitutionDepth {
		replaced := false
		var b strings.Builder
		rest := value
		for {
			i := strings.Index(rest, "${")
			if i < 0 {
				b.WriteString(rest)
				break
			}
			j := strings.IndexByte(rest[i+2:], '}')
			if j < 0 {
				b.WriteString(rest)
				break
			}
			name := rest[i+2 : i+2+j]
			sub, ok := c.resolveVar(name)
			b.WriteString(rest[:i])
			if ok && !replaced {
				b.WriteString(sub)
				replaced = true
			} else {
				b.WriteString(rest[i : i+3+j])
			}
			rest = rest[i+3+j:]
		}
		if !replaced {
			return value, nil
		}
		value = b.String()
	}
	if strings.Contains(value, "${") {
		return value, fmt.Errorf("%w: %s: variable substitution depth exceeds %d (a ${...} cycle?)", ErrBadConfig, key, maxSubstitutionDepth)
	}
	return value, nil
}

func (c *Configuration) resolveVar(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if env, ok := strings.CutPrefix(name, "env."); ok {
		// Hadoop supports ${env.NAME:-default} and ${env.NAME-default}.
		def, hasDef := "", false
		if k, d, ok := strings.Cut(env, ":-"); ok {
			env, def, hasDef = k, d, true
			if v := c.getenv(env); v != "" {
				return v, true
			}
			return def, true
		}
		if k, d, ok := strings.Cut(env, "-"); ok {
			env, def, hasDef = k, d, true
		}
		if v := c.getenv(env); v != "" {
			return v, true
		}
		if hasDef {
			return def, true
		}
		return "", false
	}
	if p, ok := c.props[name]; ok {
		return p.value, true
	}
	return "", false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
