package conf

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Catalog returns every option Sluice itself understands, sorted by key.
// The declarations live in one file per concern: core.go, pipeline.go,
// checkpointing.go, state.go, restart.go, cluster.go, resources.go, yarn.go,
// security.go.
func Catalog() []AnyOption {
	var all []AnyOption
	for _, group := range [][]AnyOption{
		coreOptions(), pipelineOptions(), checkpointingOptions(), stateOptions(),
		restartOptions(), clusterOptions(), resourceOptions(), yarnOptions(), securityOptions(),
	} {
		all = append(all, group...)
	}
	slices.SortFunc(all, func(a, b AnyOption) int { return strings.Compare(a.Key(), b.Key()) })
	return all
}

// Find returns the catalog option with the given key or deprecated key.
func Find(key string) (AnyOption, bool) {
	opt, _, ok := catalogIndex().find(key)
	return opt, ok
}

// index maps every key and deprecated key of a set of options to its option.
type index struct {
	byName  map[string]AnyOption // current and deprecated names
	current map[string]string    // name -> current key
	names   []string             // all names, sorted
}

func newIndex(opts []AnyOption) (*index, error) {
	ix := &index{byName: make(map[string]AnyOption), current: make(map[string]string)}
	if err := ix.add(opts); err != nil {
		return nil, err
	}
	return ix, nil
}

func (ix *index) add(opts []AnyOption) error {
	for _, o := range opts {
		for _, name := range append([]string{o.Key()}, o.DeprecatedKeys()...) {
			if prev, dup := ix.current[name]; dup {
				return fmt.Errorf("conf: key %q declared by both %q and %q", name, prev, o.Key())
			}
			ix.byName[name] = o
			ix.current[name] = o.Key()
		}
	}
	ix.names = slices.Sorted(maps.Keys(ix.current))
	return nil
}

// with returns a copy of ix that also knows extra. An extra option that
// repeats a known key is ignored: the catalog's declaration wins.
func (ix *index) with(extra []AnyOption) *index {
	n := &index{byName: maps.Clone(ix.byName), current: maps.Clone(ix.current)}
	var fresh []AnyOption
	for _, o := range extra {
		if _, dup := n.current[o.Key()]; !dup {
			fresh = append(fresh, o)
		}
	}
	if err := n.add(fresh); err != nil {
		// A deprecated key of an extra option collides; keep what is known.
		return ix
	}
	return n
}

func (ix *index) find(key string) (opt AnyOption, current string, ok bool) {
	opt, ok = ix.byName[key]
	return opt, ix.current[key], ok
}

// catalogIndex indexes Catalog once; the index is never modified.
var catalogIndex = sync.OnceValue(func() *index {
	ix, err := newIndex(Catalog())
	if err != nil {
		panic(err) // two declarations share a key: a bug in this package, caught by its tests
	}
	return ix
})

// canonicalKey returns the current name of a catalog key or deprecated key.
func canonicalKey(key string) (string, bool) {
	k, ok := catalogIndex().current[key]
	return k, ok
}

// separatorOf returns the list separator of the catalog option key, or ';'.
func separatorOf(key string) byte {
	if o, _, ok := catalogIndex().find(key); ok && o.separator() != 0 {
		return o.separator()
	}
	return ';'
}
