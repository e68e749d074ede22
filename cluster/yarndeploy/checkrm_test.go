package yarndeploy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
)

func TestCheckResourceManager(t *testing.T) {
	site := func(props string) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "yarn-site.xml"), []byte("<configuration>"+props+"</configuration>"), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	prop := func(k, v string) string { return "<property><name>" + k + "</name><value>" + v + "</value></property>" }
	for _, tc := range []struct {
		name    string
		confDir string
		flink   map[string]string
		ok      bool
	}{
		{"nothing", "", nil, false},
		{"a site file without it", site(prop("yarn.nodemanager.resource.memory-mb", "4096")), nil, false},
		{"yarn.resourcemanager.address", site(prop("yarn.resourcemanager.address", "rm:8032")), nil, true},
		{"yarn.resourcemanager.hostname", site(prop("yarn.resourcemanager.hostname", "rm")), nil, true},
		{"HA", site(prop("yarn.resourcemanager.ha.enabled", "true")), nil, true},
		{"flink.yarn.", "", map[string]string{"flink.yarn.resourcemanager.address": "rm:8032"}, true},
		{"flink.hadoop.", "", map[string]string{"flink.hadoop.yarn.resourcemanager.hostname": "rm"}, true},
		{"an unrelated flink.yarn. key", "", map[string]string{"flink.yarn.nodemanager.x": "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hadoop.LoadFromEnvironment(func(k string) string {
				if k == "HADOOP_CONF_DIR" {
					return tc.confDir
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			err = CheckResourceManager(h, conf.FromMap(tc.flink, conf.Source{Name: "test"}))
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrNoResourceManager) {
				t.Errorf("CheckResourceManager: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
