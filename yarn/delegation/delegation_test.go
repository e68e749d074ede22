package delegation

import (
	"strings"
	"testing"

	"github.com/sluice/sluice/hadoop"
)

func TestNameNodeOf(t *testing.T) {
	conf := func(kv ...string) *hadoop.Configuration {
		c := hadoop.NewConfiguration(func(string) string { return "" })
		for i := 0; i < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	tests := []struct {
		name string
		c    *hadoop.Configuration
		uri  string
		want NameNode
		err  string
	}{
		{"default fs with port", conf("fs.defaultFS", "hdfs://nn.example.com:9000", KeyNameNodePrincipal, "hdfs/_HOST@EX.COM"), "",
			NameNode{Addr: "nn.example.com:9000", Principal: "hdfs/_HOST@EX.COM"}, ""},
		{"explicit fs without port", conf(KeyNameNodePrincipal, "nn/_HOST@EX.COM"), "hdfs://other",
			NameNode{Addr: "other:8020", Principal: "nn/_HOST@EX.COM"}, ""},
		{"not hdfs", conf("fs.defaultFS", "file:///", KeyNameNodePrincipal, "hdfs/_HOST@EX.COM"), "", NameNode{}, `"file:///" is not an hdfs://host:port URI`},
		{"no principal", conf("fs.defaultFS", "hdfs://nn:8020"), "", NameNode{}, "dfs.namenode.kerberos.principal is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NameNodeOf(tc.c, tc.uri)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NameNodeOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
