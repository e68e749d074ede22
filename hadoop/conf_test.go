package hadoop

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func site(props ...string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, p := range props {
		b.WriteString(p)
		b.WriteString("\n")
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

func prop(name, value string) string {
	return "<property><name>" + name + "</name><value>" + value + "</value></property>"
}

func finalProp(name, value string) string {
	return "<property><name>" + name + "</name><value>" + value + "</value><final>true</final></property>"
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadFromEnvironmentLayering(t *testing.T) {
	hadoopDir, yarnDir := t.TempDir(), t.TempDir()
	writeFile(t, hadoopDir, "core-site.xml", site(
		prop("fs.defaultFS", "hdfs://nn:8020"),
		finalProp("hadoop.security.authentication", "kerberos"),
		prop("a", "core"),
	))
	writeFile(t, hadoopDir, "hdfs-site.xml", site(prop("a", "hdfs"), prop("b", "hdfs")))
	writeFile(t, hadoopDir, "yarn-site.xml", site(prop("yarn.resourcemanager.hostname", "rm1.example")))
	writeFile(t, yarnDir, "yarn-site.xml", site(
		prop("hadoop.security.authentication", "simple"), // ignored: final
		prop("b", "yarn"),
		`<property name="c" value="attr-form" final="true"/>`,
	))
	conf, err := LoadFromEnvironment(envOf(map[string]string{"HADOOP_CONF_DIR": hadoopDir, "YARN_CONF_DIR": yarnDir}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, want string }{
		{"fs.defaultFS", "hdfs://nn:8020"},
		{"hadoop.security.authentication", "kerberos"},
		{"a", "hdfs"},
		{"b", "yarn"},
		{"c", "attr-form"},
		{"yarn.resourcemanager.address", "rm1.example:8032"},
	}
	for _, tt := range tests {
		if got := conf.Get(tt.key, "<unset>"); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
		}
	}
	if !conf.IsFinal("c") || conf.IsFinal("b") {
		t.Errorf("final flags wrong: c=%v b=%v", conf.IsFinal("c"), conf.IsFinal("b"))
	}
	if got := conf.Source("b"); got != filepath.Join(yarnDir, "yarn-site.xml") {
		t.Errorf("source of b = %q", got)
	}
	if conf.Set("hadoop.security.authentication", "simple") {
		t.Error("Set overrode a final property")
	}
	m, err := conf.SecurityAuthentication()
	if err != nil || m != AuthKerberos {
		t.Errorf("SecurityAuthentication = %v, %v", m, err)
	}
}

func TestLoadFromEnvironmentErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "core-site.xml", "<configuration><property><name>x</name>")
	_, err := LoadFromEnvironment(envOf(map[string]string{"HADOOP_CONF_DIR": dir}))
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "core-site.xml") {
		t.Errorf("malformed XML: err = %v, want ErrBadConfig naming the file", err)
	}
	_, err = LoadFromEnvironment(envOf(map[string]string{"YARN_CONF_DIR": filepath.Join(dir, "missing")}))
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "YARN_CONF_DIR") {
		t.Errorf("missing dir: err = %v, want ErrBadConfig naming YARN_CONF_DIR", err)
	}
	writeFile(t, dir, "core-site.xml", site("<property><name>x</name><value>1</value><final>maybe</final></property>"))
	_, err = LoadFromEnvironment(envOf(map[string]string{"HADOOP_CONF_DIR": dir}))
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("bad final: err = %v", err)
	}
}

func TestHadoopHomeFallback(t *testing.T) {
	home := t.TempDir()
	etc := filepath.Join(home, "etc", "hadoop")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, etc, "core-site.xml", site(prop("fs.defaultFS", "hdfs://home:9000")))
	conf, err := LoadFromEnvironment(envOf(map[string]string{"HADOOP_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if got := conf.DefaultFS(); got != "hdfs://home:9000" {
		t.Errorf("DefaultFS = %q", got)
	}
}

func TestSubstitution(t *testing.T) {
	env := envOf(map[string]string{"HOME": "/home/u", "EMPTY": ""})
	tests := []struct {
		name    string
		props   map[string]string
		key     string
		want    string
		wantErr bool
	}{
		{"simple", map[string]string{"a": "${b}/x", "b": "B"}, "a", "B/x", false},
		{"chain", map[string]string{"a": "${b}", "b": "${c}", "c": "C"}, "a", "C", false},
		{"two refs", map[string]string{"a": "${b}-${c}", "b": "B", "c": "C"}, "a", "B-C", false},
		{"unknown stays", map[string]string{"a": "${nope}/x"}, "a", "${nope}/x", false},
		{"unknown then known", map[string]string{"a": "${nope}${b}", "b": "B"}, "a", "${nope}B", false},
		{"env", map[string]string{"a": "${env.HOME}/d"}, "a", "/home/u/d", false},
		{"env default", map[string]string{"a": "${env.UNSET:-dflt}"}, "a", "dflt", false},
		{"env empty default", map[string]string{"a": "${env.EMPTY:-dflt}"}, "a", "dflt", false},
		{"unterminated", map[string]string{"a": "${b"}, "a", "${b", false},
		{"cycle", map[string]string{"a": "${b}", "b": "${a}"}, "a", "", true},
		{"self", map[string]string{"a": "x${a}"}, "a", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConfiguration(env)
			for k, v := range tt.props {
				c.Set(k, v)
			}
			got, ok, err := c.Lookup(tt.key)
			if !ok {
				t.Fatal("key not set")
			}
			if tt.wantErr {
				if !errors.Is(err, ErrBadConfig) {
					t.Fatalf("err = %v, want ErrBadConfig", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Lookup = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRMAddresses(t *testing.T) {
	tests := []struct {
		name      string
		props     map[string]string
		rm, sched []RMEndpoint
		wantErr   string
	}{
		{
			name:  "defaults",
			rm:    []RMEndpoint{{Address: "0.0.0.0:8032"}},
			sched: []RMEndpoint{{Address: "0.0.0.0:8030"}},
		},
		{
			name:  "hostname",
			props: map[string]string{"yarn.resourcemanager.hostname": "rm"},
			rm:    []RMEndpoint{{Address: "rm:8032"}},
			sched: []RMEndpoint{{Address: "rm:8030"}},
		},
		{
			name: "explicit",
			props: map[string]string{
				"yarn.resourcemanager.address":           " rm:1234 ",
				"yarn.resourcemanager.scheduler.address": "sched",
			},
			rm:    []RMEndpoint{{Address: "rm:1234"}},
			sched: []RMEndpoint{{Address: "sched:8030"}},
		},
		{
			name: "ha",
			props: map[string]string{
				"yarn.resourcemanager.ha.enabled":            "true",
				"yarn.resourcemanager.ha.rm-ids":             "rm1, rm2",
				"yarn.resourcemanager.address.rm1":           "h1:1111",
				"yarn.resourcemanager.hostname.rm2":          "h2",
				"yarn.resourcemanager.hostname.rm1":          "ignored",
				"yarn.resourcemanager.scheduler.address.rm2": "h2:2222",
			},
			rm:    []RMEndpoint{{"rm1", "h1:1111"}, {"rm2", "h2:8032"}},
			sched: []RMEndpoint{{"rm1", "ignored:8030"}, {"rm2", "h2:2222"}},
		},
		{
			name:    "ha without ids",
			props:   map[string]string{"yarn.resourcemanager.ha.enabled": "true"},
			wantErr: "rm-ids",
		},
		{
			name: "ha id without address",
			props: map[string]string{
				"yarn.resourcemanager.ha.enabled": "true",
				"yarn.resourcemanager.ha.rm-ids":  "rm1",
			},
			wantErr: "yarn.resourcemanager.hostname.rm1",
		},
		{
			name:    "bad ha flag",
			props:   map[string]string{"yarn.resourcemanager.ha.enabled": "yes please"},
			wantErr: "yarn.resourcemanager.ha.enabled",
		},
		{
			name:    "bad port",
			props:   map[string]string{"yarn.resourcemanager.address": "rm:99999"},
			wantErr: "yarn.resourcemanager.address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConfiguration(nil)
			for k, v := range tt.props {
				c.Set(k, v)
			}
			rm, err := c.ResourceManagerAddresses()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rm, tt.rm) {
				t.Errorf("RM = %v, want %v", rm, tt.rm)
			}
			sched, err := c.SchedulerAddresses()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sched, tt.sched) {
				t.Errorf("scheduler = %v, want %v", sched, tt.sched)
			}
		})
	}
}

func TestRPCProtection(t *testing.T) {
	tests := []struct {
		value   string
		want    []QOP
		wantErr bool
	}{
		{"", []QOP{QOPAuthentication}, false},
		{"authentication", []QOP{QOPAuthentication}, false},
		{"privacy, integrity", []QOP{QOPPrivacy, QOPIntegrity}, false},
		{"secret", nil, true},
	}
	for _, tt := range tests {
		c := NewConfiguration(nil)
		c.Set(KeyRPCProtection, tt.value)
		got, err := c.RPCProtection()
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RPCProtection(%q) = %v, %v; want %v (err %v)", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
	c := NewConfiguration(nil)
	c.Set(KeySecurityAuthentication, "token")
	if _, err := c.SecurityAuthentication(); !errors.Is(err, ErrBadConfig) {
		t.Errorf("SecurityAuthentication(token) err = %v", err)
	}
}

func TestFallbackToSimpleAuthAllowed(t *testing.T) {
	tests := []struct {
		value   string // "" leaves the key unset
		want    bool
		wantErr bool
	}{
		{"", false, false},
		{"true", true, false},
		{" TRUE ", true, false},
		{"false", false, false},
		{"yes please", false, true},
	}
	for _, tt := range tests {
		c := NewConfiguration(nil)
		if tt.value != "" {
			c.Set(KeyFallbackToSimpleAuthAllowed, tt.value)
		}
		got, err := c.FallbackToSimpleAuthAllowed()
		if got != tt.want || (err != nil) != tt.wantErr || err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("FallbackToSimpleAuthAllowed(%q) = %v, %v; want %v (err %v)", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzConfigurationXML(f *testing.F) {
	f.Add([]byte(site(prop("a", "${b}"), prop("b", "x"), finalProp("c", "y"))))
	f.Add([]byte(`<configuration><property name="a" value="1"/></configuration>`))
	f.Add([]byte(`<configuration><property><name>a</name><value>${a}${a}</value></property></configuration>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewConfiguration(nil)
		if err := c.AddResource("fuzz.xml", strings.NewReader(string(data))); err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error does not wrap ErrBadConfig: %v", err)
			}
			return
		}
		for _, k := range c.Keys() {
			if _, _, err := c.Lookup(k); err != nil && !errors.Is(err, ErrBadConfig) {
				t.Fatalf("Lookup(%q) error does not wrap ErrBadConfig: %v", k, err)
			}
		}
		_, _ = c.ResourceManagerAddresses()
	})
}
