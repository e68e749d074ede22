package conf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sameAsDefault reads opt in c and compares it with opt's default.
func sameAsDefault(c *Configuration, opt AnyOption) (got, def string, same bool, err error) {
	switch o := opt.(type) {
	case Option[int]:
		return compareDefault(c, o)
	case Option[string]:
		return compareDefault(c, o)
	case Option[bool]:
		return compareDefault(c, o)
	case Option[float64]:
		return compareDefault(c, o)
	case Option[time.Duration]:
		return compareDefault(c, o)
	case Option[MemorySize]:
		return compareDefault(c, o)
	case Option[[]string]:
		return compareDefault(c, o)
	}
	return "", "", false, fmt.Errorf("the test cannot read options of type %T", opt)
}

func compareDefault[T any](c *Configuration, o Option[T]) (got, def string, same bool, err error) {
	v, _, err := Lookup(c, o)
	return o.Format(v), o.Format(o.Default()), reflect.DeepEqual(v, o.Default()), err
}

// commentedSetting is a commented-out "# key: value" line of config.yaml
// (its keys have a dot; the prose does not start that way).
var commentedSetting = regexp.MustCompile(`^#\s*([a-zA-Z][\w-]*(?:\.[\w-]+)+):\s+(\S.*)$`)

// TestShippedConfigIsTheDefaults keeps conf/config.yaml in step with the
// catalog: it loads without a warning or a problem; every key it sets is a
// catalog key under its current name, set to the option's default; and
// every commented-out setting names a catalog key without a default, with
// an example value that validates.
func TestShippedConfigIsTheDefaults(t *testing.T) {
	c, warnings, err := Load(Sources{ConfDir: "."})
	if err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("config.yaml: %s", w)
	}
	if c.Len() < 20 {
		t.Fatalf("config.yaml sets %d keys; it is the commented defaults of the main options", c.Len())
	}
	for _, key := range c.Keys() {
		opt, ok := Find(key)
		if !ok {
			t.Errorf("config.yaml sets %q, which is not a catalog key", key)
			continue
		}
		if opt.Key() != key {
			t.Errorf("config.yaml sets %q under a deprecated name; use %q", key, opt.Key())
		}
		got, def, same, err := sameAsDefault(c, opt)
		if err != nil {
			t.Errorf("config.yaml: %v", err)
		} else if !same {
			t.Errorf("config.yaml sets %s: %s; its default is %s", key, got, def)
		}
	}

	data, err := os.ReadFile(FileName)
	if err != nil {
		t.Fatal(err)
	}
	commented := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		m := commentedSetting.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		commented++
		key := m[1]
		opt, ok := Find(key)
		switch {
		case !ok:
			t.Errorf("config.yaml:%d: commented-out %q is not a catalog key", line, key)
			continue
		case opt.Key() != key:
			t.Errorf("config.yaml:%d: commented-out %q is a deprecated name; use %q", line, key, opt.Key())
		case !strings.HasPrefix(opt.DefaultString(), "(none)"):
			t.Errorf("config.yaml:%d: %s has the default %s; set it to that rather than commenting out an example", line, key, opt.DefaultString())
		case IsSet(c, opt):
			t.Errorf("config.yaml:%d: %s is also set", line, key)
		}
		// The example as a one-line file: no warning, no problem.
		example, err := ParseYAML(fmt.Sprintf("config.yaml:%d", line), []byte(key+": "+m[2]))
		if err != nil {
			t.Errorf("config.yaml:%d: the example does not parse: %v", line, err)
			continue
		}
		if w, err := example.Validate(); err != nil || len(w) > 0 {
			t.Errorf("config.yaml:%d: the example %s: %s does not validate: %v %v", line, key, m[2], err, w)
		}
	}
	if commented == 0 {
		t.Error("config.yaml has no commented-out settings; the test's pattern for them no longer matches")
	}
}
