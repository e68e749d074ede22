package conf

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestYAMLNestedAndFlatAreEquivalent checks that the same settings written
// as nested maps, flat dotted keys, or a mix, read the same.
func TestYAMLNestedAndFlatAreEquivalent(t *testing.T) {
	want := map[string]string{
		"execution.checkpointing.interval": "10s",
		"execution.checkpointing.mode":     "EXACTLY_ONCE",
		"parallelism.default":              "4",
		"taskmanager.numberOfTaskSlots":    "2",
		"yarn.ship-files":                  "a;b",
		"yarn.tags":                        "t1,t2",
	}
	docs := map[string]string{
		"flat": `
execution.checkpointing.interval: 10s
execution.checkpointing.mode: EXACTLY_ONCE
parallelism.default: 4
taskmanager.numberOfTaskSlots: 2
yarn.ship-files: [a, b]
yarn.tags: [t1, t2]
`,
		"nested": `
execution:
  checkpointing:
    interval: 10s
    mode: EXACTLY_ONCE
parallelism:
  default: 4
taskmanager:
  numberOfTaskSlots: 2
yarn:
  ship-files:
    - a
    - b
  tags:
    - t1
    - t2
`,
		"mixed": `
execution:
  checkpointing.interval: 10s
  checkpointing:
    mode: EXACTLY_ONCE
parallelism.default: 4
taskmanager: {numberOfTaskSlots: 2}
yarn: {ship-files: [a, b], tags: "t1,t2"}
`,
		"one-line strings": `
execution.checkpointing: {interval: "10s", mode: "EXACTLY_ONCE"}
parallelism.default: "4"
taskmanager.numberOfTaskSlots: '2'
yarn.ship-files: a;b
yarn.tags: t1,t2
`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			c, err := ParseYAML("config.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := c.ToMap(); !maps.Equal(got, want) {
				t.Fatalf("ToMap() = %v\nwant      %v", got, want)
			}
		})
	}
}

func TestYAMLLineNumbers(t *testing.T) {
	c, err := ParseYAML("conf/config.yaml", []byte(`# comment
parallelism.default: 2
execution:
  checkpointing:
    interval: 5 s
yarn.ship-files:
  - one
`))
	if err != nil {
		t.Fatal(err)
	}
	for key, line := range map[string]int{
		"parallelism.default":              2,
		"execution.checkpointing.interval": 5,
		"yarn.ship-files":                  6,
	} {
		e, ok := c.Raw(key)
		if !ok || e.Source != (Source{Name: "conf/config.yaml", Line: line}) {
			t.Errorf("%s: source = %v, want conf/config.yaml:%d", key, e.Source, line)
		}
	}
}

func TestYAMLStructuralProblems(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the problems, in order
	}{
		{"flat and nested duplicate", "execution.checkpointing.interval: 1 s\nexecution:\n  checkpointing:\n    interval: 2 s\n",
			[]string{`config.yaml:4: execution.checkpointing.interval: set more than once; first set at line 1`}},
		{"current and deprecated key", "state.checkpoints.dir: /a\nexecution.checkpointing.dir: /b\n",
			[]string{`config.yaml:2: execution.checkpointing.dir: set more than once; first set at line 1 as "state.checkpoints.dir"`}},
		{"no value", "parallelism.default:\nrest.port: ~\n",
			[]string{"config.yaml:1: parallelism.default: no value", "config.yaml:2: rest.port: no value"}},
		{"top level list", "- a\n- b\n", []string{"config.yaml:1: the top level must be a mapping"}},
		{"top level scalar", "just text\n", []string{"config.yaml:1: the top level must be a mapping"}},
		{"nested list item", "yarn.ship-files: [a, [b]]\n", []string{"config.yaml:1: yarn.ship-files: list items must be plain values"}},
		{"merge key", "base: &b {x: 1}\nexecution:\n  <<: *b\n", []string{"config.yaml:3: execution: YAML merge keys"}},
		{"two documents", "a.b: 1\n---\nc.d: 2\n", []string{"config.yaml:2: a second YAML document"}},
		{"list for a scalar option", "parallelism.default: [1, 2]\n", []string{"config.yaml:1: parallelism.default: invalid integer \"1;2\": expects a single value, not a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseYAML("config.yaml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ve.Problems), len(tt.want), err)
			}
			for i, w := range tt.want {
				if got := ve.Problems[i].Error(); !strings.Contains(got, w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got, w)
				}
			}
		})
	}
}

func TestYAMLSyntaxError(t *testing.T) {
	for _, doc := range []string{"a: b: c\n", "key: [unclosed\n", "\tkey: tab\n", "a: 1\n---\n: : :\n  - [\n"} {
		_, err := ParseYAML("config.yaml", []byte(doc))
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "config.yaml") {
			t.Errorf("ParseYAML(%q) error = %v, want ErrSyntax naming the file", doc, err)
		}
	}
}

func TestYAMLEmptyAndAliases(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "~\n", "---\n"} {
		c, err := ParseYAML("config.yaml", []byte(doc))
		if err != nil || c.Len() != 0 {
			t.Errorf("ParseYAML(%q) = %v entries, %v", doc, c.Len(), err)
		}
		if _, err := c.Validate(); err != nil {
			t.Errorf("Validate(%q) = %v", doc, err)
		}
	}
	c, err := ParseYAML("config.yaml", []byte(`
dir: &d hdfs:///sluice/cp
execution.checkpointing.dir: *d
libs: &l [x, y]
yarn.provided.lib.dirs: *l
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := Get(c, CheckpointingDir); got != "hdfs:///sluice/cp" {
		t.Errorf("aliased scalar = %q", got)
	}
	if got := Get(c, YarnProvidedLibDirs); len(got) != 2 || got[1] != "y" {
		t.Errorf("aliased list = %q", got)
	}
}

func TestYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString(strings.NewReplacer("N", string(rune('0'+i)), "P", string(rune('0'+i-1))).Replace(
			"aN: &aN {k1: *aP, k2: *aP, k3: *aP, k4: *aP, k5: *aP, k6: *aP, k7: *aP, k8: *aP, k9: *aP, k10: *aP}\n"))
	}
	c, err := ParseYAML("config.yaml", []byte(b.String()))
	if err != nil {
		return // rejected by the YAML parser itself: fine
	}
	_, err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), "YAML nodes") {
		t.Fatalf("Validate() = %v, want the node limit reported", err)
	}
}
