package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Limits that keep a hostile or broken file from exhausting the reader;
// no real configuration comes near them.
const (
	maxYAMLDepth = 32      // nesting of mappings
	maxYAMLNodes = 100_000 // nodes visited, counting each expansion of an alias
)

// ParseYAML reads a config.yaml in the standard YAML form of Flink 1.19+ and
// 2.x: a mapping whose keys may be nested maps, flat dotted keys or a mix,
//
//	execution:
//	  checkpointing:
//	    interval: 10 s
//	execution.checkpointing.mode: EXACTLY_ONCE
//
// with YAML sequences for list options. name is used in messages
// (config.yaml:12). Only a file that is not YAML is an error (wrapping
// ErrSyntax); every other problem, such as a key set twice or a key without a
// value, is kept in the result and reported by Validate together with the
// values that do not parse.
func ParseYAML(name string, data []byte) (*Configuration, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return New(), nil
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, name, err)
	}
	r := &yamlReader{name: name, c: &Configuration{entries: make(map[string]entry)}, first: make(map[string]Source)}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		r.problem("", next.Line, "", "a second YAML document; a config file holds one")
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: %s: %v", ErrSyntax, name, err)
	}
	if len(doc.Content) == 0 {
		return r.c, nil
	}
	root := r.resolve(doc.Content[0])
	switch {
	case root == nil:
	case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
	case root.Kind != yaml.MappingNode:
		r.problem("", root.Line, "", "the top level must be a mapping of keys to values")
	default:
		r.mapping("", root, 1)
	}
	return r.c, nil
}

type yamlReader struct {
	name  string
	c     *Configuration
	first map[string]Source // current key -> key as written and line where it was first set
	nodes int
}

func (r *yamlReader) problem(key string, line int, val, reason string) {
	r.c.problems = append(r.c.problems, Problem{Key: key, Value: val, Source: Source{Name: r.name, Line: line}, Reason: reason})
}

// resolve follows aliases and counts the node against the budget; it
// returns nil once the budget is spent.
func (r *yamlReader) resolve(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > maxYAMLDepth {
			return nil
		}
		n = n.Alias
	}
	r.nodes++
	if r.nodes == maxYAMLNodes {
		r.problem("", 0, "", fmt.Sprintf("more than %d YAML nodes; the rest of the file is ignored", maxYAMLNodes))
	}
	if r.nodes >= maxYAMLNodes {
		return nil
	}
	return n
}

func (r *yamlReader) mapping(prefix string, m *yaml.Node, depth int) {
	if depth > maxYAMLDepth {
		r.problem(prefix, m.Line, "", fmt.Sprintf("nested more than %d levels deep", maxYAMLDepth))
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := r.resolve(m.Content[i]), r.resolve(m.Content[i+1])
		if k == nil || v == nil {
			return
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Value == "" {
			r.problem(prefix, k.Line, "", "keys must be non-empty plain strings")
			continue
		}
		if k.Tag == "!!merge" {
			r.problem(prefix, k.Line, "", "YAML merge keys (<<) are not supported; write the keys out")
			continue
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + k.Value
		}
		switch v.Kind {
		case yaml.MappingNode:
			r.mapping(key, v, depth+1)
		case yaml.SequenceNode:
			r.sequence(key, k.Line, v)
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				r.problem(key, k.Line, "", "no value")
				continue
			}
			r.set(key, k.Line, value{text: v.Value})
		default:
			r.problem(key, k.Line, "", "unsupported YAML value")
		}
	}
}

func (r *yamlReader) sequence(key string, line int, s *yaml.Node) {
	items := make([]string, 0, len(s.Content))
	for _, n := range s.Content {
		n = r.resolve(n)
		if n == nil {
			return
		}
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			r.problem(key, n.Line, "", "list items must be plain values")
			return
		}
		items = append(items, n.Value)
	}
	r.set(key, line, value{text: FormatList(items, separatorOf(key)), items: items})
}

func (r *yamlReader) set(key string, line int, v value) {
	current := key
	if canon, ok := canonicalKey(key); ok {
		current = canon
	}
	if first, dup := r.first[current]; dup {
		reason := fmt.Sprintf("set more than once; first set at line %d", first.Line)
		if first.Name != key {
			reason += fmt.Sprintf(" as %q", first.Name)
		}
		r.problem(key, line, v.text, reason)
	} else {
		r.first[current] = Source{Name: key, Line: line}
	}
	r.c.put(key, v, Source{Name: r.name, Line: line})
}
