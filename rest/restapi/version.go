package restapi

import (
	"runtime/debug"
	"strings"
)

// BuildVersion is the version and revision of the running binary, as the
// Go toolchain recorded them, for Flink's flink-version and flink-revision
// (flink-commit): the main module's version ("devel" for a build from a
// checkout), and "<commit> @ <commit time>" with "-dirty" after a commit
// that was built with changes. "unknown" when the binary records nothing.
func BuildVersion() (version, revision string) {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok)
}

func versionOf(bi *debug.BuildInfo, ok bool) (version, revision string) {
	if !ok || bi == nil {
		return "unknown", "unknown"
	}
	version = strings.TrimPrefix(bi.Main.Version, "v")
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return version, "unknown"
	}
	revision = rev[:min(len(rev), 12)]
	if dirty {
		revision += "-dirty"
	}
	if at != "" {
		revision += " @ " + at
	}
	return version, revision
}
