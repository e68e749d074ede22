package restapi

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name          string
		bi            *debug.BuildInfo
		ok            bool
		version, revs string
	}{
		{name: "no build info", version: "unknown", revs: "unknown"},
		{name: "a release", ok: true, bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.4.1"},
			Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "false")},
			version: "0.4.1", revs: "0123456789ab @ 2026-12-01T10:00:00Z"},
		{name: "a checkout with changes", ok: true, bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "fedcba9876543210", "vcs.time", "2026-12-02T08:30:00Z", "vcs.modified", "true")},
			version: "devel", revs: "fedcba987654-dirty @ 2026-12-02T08:30:00Z"},
		{name: "no vcs", ok: true, bi: &debug.BuildInfo{}, version: "devel", revs: "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, r := versionOf(tc.bi, tc.ok)
			if v != tc.version || r != tc.revs {
				t.Fatalf("versionOf = %q, %q; want %q, %q", v, r, tc.version, tc.revs)
			}
		})
	}
}
