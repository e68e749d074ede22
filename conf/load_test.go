package conf

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseDynamicProperty(t *testing.T) {
	tests := []struct {
		in, key, value string
		wantErr        bool
	}{
		{"parallelism.default=4", "parallelism.default", "4", false},
		{"-Dparallelism.default=4", "parallelism.default", "4", false},
		{" rest.port = 9000 ", "rest.port", "9000", false},
		{"pipeline.name=", "pipeline.name", "", false},
		{"properties.sasl.jaas.config=Login required user=\"a\";", "properties.sasl.jaas.config", "Login required user=\"a\";", false},
		{"yarn.ship-files=a;b", "yarn.ship-files", "a;b", false},
		{"novalue", "", "", true},
		{"=4", "", "", true},
		{"-D", "", "", true},
		{"my key=4", "", "", true},
		{"", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			k, v, err := ParseDynamicProperty(tt.in)
			if tt.wantErr {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("ParseDynamicProperty(%q) = %q, %q, %v; want a *ValueError", tt.in, k, v, err)
				}
				return
			}
			if err != nil || k != tt.key || v != tt.value {
				t.Fatalf("ParseDynamicProperty(%q) = %q, %q, %v; want %q, %q", tt.in, k, v, err, tt.key, tt.value)
			}
		})
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadPrecedence checks defaults < file < dynamic properties.
func TestLoadPrecedence(t *testing.T) {
	dir := writeConfig(t, `
parallelism.default: 2
execution.checkpointing.interval: 30 s
state.checkpoints.dir: hdfs:///from-file
`)
	tests := []struct {
		name     string
		src      Sources
		par      int
		interval time.Duration
		dir      string
		slots    int
	}{
		{"defaults only", Sources{}, 1, 0, "", 1},
		{"file via conf dir", Sources{ConfDir: dir}, 2, 30 * time.Second, "hdfs:///from-file", 1},
		{"file via path", Sources{File: filepath.Join(dir, FileName), ConfDir: "/nonexistent"}, 2, 30 * time.Second, "hdfs:///from-file", 1},
		{"dynamic over file", Sources{ConfDir: dir, Dynamic: []string{
			"parallelism.default=8", "execution.checkpointing.dir=hdfs:///from-cli", "taskmanager.numberOfTaskSlots=3",
		}}, 8, 30 * time.Second, "hdfs:///from-cli", 3},
		{"later dynamic wins", Sources{Dynamic: []string{"parallelism.default=5", "parallelism.default=6"}}, 6, 0, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Load(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := Get(c, ParallelismDefault); got != tt.par {
				t.Errorf("parallelism.default = %d, want %d", got, tt.par)
			}
			if got := Get(c, CheckpointingInterval); got != tt.interval {
				t.Errorf("interval = %v, want %v", got, tt.interval)
			}
			if got := Get(c, CheckpointingDir); got != tt.dir {
				t.Errorf("checkpoint dir = %q, want %q", got, tt.dir)
			}
			if got := Get(c, TaskManagerNumberOfTaskSlots); got != tt.slots {
				t.Errorf("slots = %d, want %d", got, tt.slots)
			}
		})
	}
}

func TestLoadReportsFileAndDynamicProblemsTogether(t *testing.T) {
	dir := writeConfig(t, "parallelism.default: many\nstate.checkpoints.dir: /x\n")
	_, warnings, err := Load(Sources{ConfDir: dir, Dynamic: []string{"rest.port=-1"}})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("Load() = %v; want two problems", err)
	}
	if ve.Problems[0].Source != (Source{Name: filepath.Join(dir, FileName), Line: 1}) || ve.Problems[1].Source.Name != SourceDynamic {
		t.Errorf("problem sources = %v, %v", ve.Problems[0].Source, ve.Problems[1].Source)
	}
	if len(warnings) != 1 || warnings[0].Kind != DeprecatedKey {
		t.Errorf("warnings = %v", warnings)
	}
}

func TestLoadFileErrors(t *testing.T) {
	if _, _, err := Load(Sources{ConfDir: t.TempDir()}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing config.yaml: %v, want fs.ErrNotExist", err)
	}
	if _, _, err := Load(Sources{File: filepath.Join(t.TempDir(), "none.yaml")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	dir := writeConfig(t, "a: [\n")
	if _, _, err := Load(Sources{ConfDir: dir}); !errors.Is(err, ErrSyntax) {
		t.Errorf("bad YAML: %v, want ErrSyntax", err)
	}
}
