package hdfs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
	"github.com/sluice/sluice/security/kerberos"
)

func conf(t *testing.T, props map[string]string) *hadoop.Configuration {
	t.Helper()
	var b strings.Builder
	b.WriteString("<configuration>")
	for k, v := range props {
		b.WriteString("<property><name>" + k + "</name><value>" + v + "</value></property>")
	}
	b.WriteString("</configuration>")
	c := hadoop.NewConfiguration(nil)
	if err := c.AddResource("test-site.xml", strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNameNodes(t *testing.T) {
	ha := map[string]string{
		"fs.defaultFS":                        "hdfs://prod",
		"dfs.nameservices":                    "prod,other",
		"dfs.ha.namenodes.prod":               "nn1, nn2",
		"dfs.namenode.rpc-address.prod.nn1":   "nn1.example.com:8020",
		"dfs.namenode.rpc-address.prod.nn2":   "nn2.example.com:8020",
		"dfs.ha.namenodes.other":              "a",
		"dfs.namenode.rpc-address.other.a":    "other-a:9000",
		"dfs.ha.namenodes.unlisted":           "x",
		"dfs.namenode.rpc-address.unlisted.x": "unlisted-x:8020",
	}
	tests := []struct {
		name      string
		props     map[string]string
		authority string
		want      string // comma-joined addresses
		wantErr   error
		naming    string
	}{
		{"host and port", nil, "nn.example.com:9000", "nn.example.com:9000", nil, ""},
		{"host without port", nil, "nn.example.com", "nn.example.com:8020", nil, ""},
		{"default FS", map[string]string{"fs.defaultFS": "hdfs://nn:9000"}, "", "nn:9000", nil, ""},
		{"default FS without port", map[string]string{"fs.defaultFS": "hdfs://nn"}, "", "nn:8020", nil, ""},
		{"HA nameservice by default FS", ha, "", "nn1.example.com:8020,nn2.example.com:8020", nil, ""},
		{"HA nameservice by name", ha, "other", "other-a:9000", nil, ""},
		{"HA nameservice not in dfs.nameservices", ha, "unlisted", "unlisted-x:8020", nil, ""},
		{"a host that is no nameservice", ha, "plainhost", "plainhost:8020", nil, ""},
		{"a nameservice name with a port is a host", ha, "prod:8020", "prod:8020", nil, ""},
		{"default FS is local", nil, "", "", hdfs.ErrNoNameNode, "file:///"},
		{"default FS is another scheme", map[string]string{"fs.defaultFS": "s3a://bucket"}, "", "", hdfs.ErrNoNameNode, "s3a://bucket"},
		{"nameservice without NameNodes", map[string]string{"dfs.nameservices": "ns"}, "ns", "", hdfs.ErrNoNameNode, "dfs.ha.namenodes.ns"},
		{"NameNode without address", map[string]string{"dfs.ha.namenodes.ns": "a,b", "dfs.namenode.rpc-address.ns.a": "h:1"}, "ns", "", hdfs.ErrNoNameNode, "dfs.namenode.rpc-address.ns.b"},
		{"NameNode address without port", map[string]string{"dfs.ha.namenodes.ns": "a", "dfs.namenode.rpc-address.ns.a": "h"}, "ns", "", hadoop.ErrBadConfig, "dfs.namenode.rpc-address.ns.a"},
		{"bad port", nil, "nn:http", "", hdfs.ErrNoNameNode, "nn:http"},
		{"port out of range", nil, "nn:70000", "", hdfs.ErrNoNameNode, "nn:70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hdfs.NameNodes(conf(t, tt.props), tt.authority)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.naming) {
					t.Fatalf("NameNodes(%q) = %v, %v; want %v naming %s", tt.authority, got, err, tt.wantErr, tt.naming)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("NameNodes(%q) = %v, want %s", tt.authority, got, tt.want)
			}
		})
	}
}

func TestOptionsFor(t *testing.T) {
	env := map[string]string{"HADOOP_USER_NAME": "etl"}
	getenv := func(k string) string { return env[k] }
	c := conf(t, map[string]string{"fs.defaultFS": "hdfs://nn:9000", "dfs.client.use.datanode.hostname": "true"})
	o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: c, Getenv: getenv, Tune: func(o *hdfs.Options) { o.CloseRetries = 9 }}, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Addresses, ",") != "nn:9000" || o.User != "etl" || !o.UseDatanodeHostname || o.CloseRetries != 9 {
		t.Errorf("options %+v", o)
	}
	o, err = hdfs.OptionsFor(hdfs.Config{Hadoop: c, Getenv: getenv, User: "explicit"}, "other:1")
	if err != nil || o.User != "explicit" || o.Addresses[0] != "other:1" {
		t.Errorf("options %+v, %v", o, err)
	}
	// Without a configuration, the URI must name the NameNode.
	if _, err := hdfs.OptionsFor(hdfs.Config{Getenv: getenv}, ""); !errors.Is(err, hdfs.ErrNoNameNode) {
		t.Errorf("no configuration, no authority: %v", err)
	}

	krb := conf(t, map[string]string{"fs.defaultFS": "hdfs://nn:9000", "hadoop.security.authentication": "kerberos"})
	_, err = hdfs.OptionsFor(hdfs.Config{Hadoop: krb, Getenv: getenv}, "")
	if !errors.Is(err, hdfs.ErrNoKerberosLogin) || !strings.Contains(err.Error(), "test-site.xml") {
		t.Errorf("a Kerberos cluster: %v; want ErrNoKerberosLogin naming the file that asks for it", err)
	}
	for _, tc := range []struct {
		prot, suites, want string // want "": refused
		says               string
	}{
		{"authentication", "", "authentication", ""},
		{"Privacy", "AES/CTR/NoPadding", "privacy", ""},
		{"privacy", "3DES,AES/CTR/NoPadding", "privacy", ""},
		{"privacy", "", "", "dfs.encrypt.data.transfer.cipher.suites=AES/CTR/NoPadding"},
		{"integrity", "AES/CTR/NoPadding", "", "integrity, or a list of several, is not supported"},
		{"authentication,privacy", "AES/CTR/NoPadding", "", "a list of several"},
	} {
		props := map[string]string{"fs.defaultFS": "hdfs://nn:9000", "hadoop.security.authentication": "kerberos",
			"dfs.namenode.kerberos.principal": "hdfs/_HOST@EX.COM", "dfs.data.transfer.protection": tc.prot}
		if tc.suites != "" {
			props["dfs.encrypt.data.transfer.cipher.suites"] = tc.suites
		}
		o, err := hdfs.OptionsFor(hdfs.Config{Hadoop: conf(t, props), Getenv: getenv, Kerberos: &kerberos.Login{}}, "")
		if tc.want != "" {
			if err != nil || o.DataTransferProtection != tc.want {
				t.Errorf("protection %s, suites %q: %q, %v; want %q", tc.prot, tc.suites, o.DataTransferProtection, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, hdfs.ErrDataTransferProtection) || !strings.Contains(err.Error(), "dfs.data.transfer.protection") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("protection %s, suites %q: %v; want ErrDataTransferProtection naming the key and saying %q", tc.prot, tc.suites, err, tc.says)
		}
	}
	bad := conf(t, map[string]string{"dfs.client.use.datanode.hostname": "maybe"})
	if _, err := hdfs.OptionsFor(hdfs.Config{Hadoop: bad, Getenv: getenv}, "nn:1"); !errors.Is(err, hadoop.ErrBadConfig) {
		t.Errorf("a bad boolean: %v", err)
	}
}

func TestValidate(t *testing.T) {
	err := hdfs.Options{Addresses: []string{"nohost"}, DialTimeout: -1}.Validate()
	for _, want := range []string{`"nohost" is not host:port`, "User is empty", "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to say %s", err, want)
		}
	}
	if err := (hdfs.Options{}).Validate(); !errors.Is(err, hdfs.ErrNoNameNode) {
		t.Errorf("no addresses: %v", err)
	}
	if _, err := hdfs.Dial(hdfs.Options{}); err == nil {
		t.Error("Dial with empty options succeeded")
	}
}
