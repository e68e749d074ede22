// Package flamegraph builds Flink's flame graphs from Go's own profiles: the
// stacks of a subtask's goroutines, picked out of a CPU or goroutine profile
// by the pprof labels its task goroutine carries, merged into Flink's tree
// of {"name", "value", "children"} nodes, root first.
//
// It is pure: profiles come in parsed (github.com/google/pprof/profile),
// stacks and trees go out. Taking the profiles is package sample's work.
package flamegraph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Type is the kind of flame graph asked for, Flink's FlameGraphTypeQueryParameter.
type Type string

// Flink's flame-graph types.
const (
	// Full is every sampled stack, running or waiting (Flink: every
	// thread state).
	Full Type = "FULL"
	// OnCPU is what ran on a CPU: the samples of a CPU profile (Flink:
	// RUNNABLE and NEW threads).
	OnCPU Type = "ON_CPU"
	// OffCPU is the stacks of goroutines that were parked (blocked on a
	// channel, lock, timer, I/O) when sampled (Flink: WAITING,
	// TIMED_WAITING and BLOCKED threads).
	OffCPU Type = "OFF_CPU"
)

// ParseType reads a type parameter; "" is Full, as in Flink.
func ParseType(s string) (Type, error) {
	switch t := Type(strings.ToUpper(s)); t {
	case "":
		return Full, nil
	case Full, OnCPU, OffCPU:
		return t, nil
	}
	return "", fmt.Errorf("flamegraph: type %q is none of FULL, ON_CPU, OFF_CPU", s)
}

// CPU reports whether graphs of type t are built from a CPU profile (else
// from goroutine samples).
func (t Type) CPU() bool { return t == OnCPU }

// Node is one node of Flink's flame graph (VertexFlameGraph.Node): a stack
// frame, how many samples passed through it, and the frames it called.
type Node struct {
	Name     string `json:"name"`
	Value    int64  `json:"value"`
	Children []Node `json:"children"`
}

// Stack is a sampled stack: its frames root first, how many samples had
// it, and whether its goroutine was parked (off CPU) then.
type Stack struct {
	Frames []string
	Count  int64
	OffCPU bool
}

// Match is the pprof labels a sample must carry to be kept: for every key,
// one of the values given.
type Match map[string][]string

func (m Match) matches(labels map[string][]string) bool {
	for k, want := range m {
		if !slices.ContainsFunc(labels[k], func(v string) bool { return slices.Contains(want, v) }) {
			return false
		}
	}
	return true
}

// parkFrames are the runtime functions at the top of a parked goroutine's
// stack: every blocking operation (channels, select, locks, sleeps,
// network and timers) parks through them.
var parkFrames = map[string]bool{
	"runtime.gopark":       true,
	"runtime.goparkunlock": true,
}

// preemptFrames are the runtime's frames at the top of a running goroutine
// stopped for a goroutine profile: noise, dropped.
var preemptFrames = map[string]bool{
	"runtime.asyncPreempt":  true,
	"runtime.asyncPreempt2": true,
}

// Stacks returns the samples of p whose labels match m, their frames
// named "function (file:line)" root first, at most depth of them (the
// innermost, as Flink's stack-depth keeps the top of a stack; 0 keeps
// all). Count is the sample's first value: the number of samples of a
// CPU profile ("samples/count") and of goroutines with that stack in a
// goroutine profile. Equal stacks are merged.
func Stacks(p *profile.Profile, m Match, depth int) []Stack {
	var out []Stack
	for _, s := range p.Sample {
		if len(s.Value) == 0 || s.Value[0] <= 0 || !m.matches(s.Label) {
			continue
		}
		var leafFirst []string
		offCPU := false
		for _, loc := range s.Location {
			for _, ln := range loc.Line { // inlined callees first
				if ln.Function == nil || len(leafFirst) == 0 && preemptFrames[ln.Function.Name] {
					continue
				}
				if len(leafFirst) == 0 {
					offCPU = parkFrames[ln.Function.Name]
				}
				leafFirst = append(leafFirst, frameName(ln))
			}
		}
		if len(leafFirst) == 0 {
			continue
		}
		if depth > 0 && len(leafFirst) > depth {
			leafFirst = leafFirst[:depth]
		}
		slices.Reverse(leafFirst)
		out = append(out, Stack{Frames: leafFirst, Count: s.Value[0], OffCPU: offCPU})
	}
	return Merge(out)
}

// frameName names a frame as Flink's "Class.method:line" nodes do, with
// Go's names: "github.com/x/job.(*Op).Map (op.go:42)".
func frameName(ln profile.Line) string {
	file := ln.Function.Filename
	file = file[strings.LastIndexByte(file, '/')+1:]
	return fmt.Sprintf("%s (%s:%d)", ln.Function.Name, file, ln.Line)
}

// Tree merges the stacks that graphs of type t show into Flink's tree:
// a node "root" whose value is the number of samples, and under it each
// frame once per distinct path from the root, valued by the samples
// through it. Children are ordered by name, so equal input gives equal
// output. ON_CPU and FULL keep every stack, OFF_CPU only parked ones.
func Tree(t Type, stacks []Stack) Node {
	root := &builder{name: "root"}
	for _, s := range stacks {
		if t == OffCPU && !s.OffCPU {
			continue
		}
		root.value += s.Count
		n := root
		for _, f := range s.Frames {
			n = n.child(f)
			n.value += s.Count
		}
	}
	return root.node()
}

type builder struct {
	name     string
	value    int64
	children map[string]*builder
}

func (b *builder) child(name string) *builder {
	if b.children == nil {
		b.children = map[string]*builder{}
	}
	c, ok := b.children[name]
	if !ok {
		c = &builder{name: name}
		b.children[name] = c
	}
	return c
}

func (b *builder) node() Node {
	n := Node{Name: b.name, Value: b.value, Children: make([]Node, 0, len(b.children))}
	for _, c := range b.children {
		n.Children = append(n.Children, c.node())
	}
	slices.SortFunc(n.Children, func(x, y Node) int { return cmp.Compare(x.Name, y.Name) })
	return n
}

// Merge merges equal stacks (equal frames and parking) of lists of stacks
// into one list, summing their counts, in the order first seen.
func Merge(lists ...[]Stack) []Stack {
	byKey := map[string]int{}
	var out []Stack
	for _, l := range lists {
		for _, s := range l {
			key := fmt.Sprint(s.OffCPU, "\x00", strings.Join(s.Frames, "\x00"))
			if i, ok := byKey[key]; ok {
				out[i].Count += s.Count
				continue
			}
			byKey[key] = len(out)
			out = append(out, Stack{Frames: slices.Clone(s.Frames), Count: s.Count, OffCPU: s.OffCPU})
		}
	}
	return out
}
