package storage_test

import (
	"fmt"
	"testing"

	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
)

func TestSharedRegistry(t *testing.T) {
	type step struct {
		op      string // "reg" or "rel"
		id      int64
		handles []string
		freed   string // for rel: the handles freed
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a file used by one checkpoint", []step{
			{"reg", 1, []string{"a"}, ""},
			{"rel", 1, nil, "[a]"},
		}},
		{"a file kept while a later checkpoint uses it", []step{
			{"reg", 1, []string{"a", "b"}, ""},
			{"reg", 2, []string{"b", "c"}, ""},
			{"rel", 1, nil, "[a]"},
			{"rel", 2, nil, "[b c]"},
		}},
		{"release out of order", []step{
			{"reg", 1, []string{"a"}, ""},
			{"reg", 2, []string{"a"}, ""},
			{"reg", 3, []string{"a", "b"}, ""},
			{"rel", 2, nil, "[]"},
			{"rel", 3, nil, "[b]"},
			{"rel", 1, nil, "[a]"},
		}},
		{"duplicates count once", []step{
			{"reg", 1, []string{"a", "a"}, ""},
			{"reg", 1, []string{"a"}, ""},
			{"rel", 1, nil, "[a]"},
		}},
		{"unknown and repeated releases", []step{
			{"rel", 5, nil, "[]"},
			{"reg", 5, nil, ""},
			{"rel", 5, nil, "[]"},
			{"rel", 5, nil, "[]"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := storage.NewSharedRegistry()
			for i, s := range tt.steps {
				switch s.op {
				case "reg":
					r.Register(s.id, s.handles...)
					if !r.Has(s.id) {
						t.Fatalf("step %d: checkpoint %d not registered", i, s.id)
					}
				case "rel":
					freed := r.Release(s.id)
					if freed == nil {
						freed = []string{}
					}
					if got := fmt.Sprint(freed); got != s.freed {
						t.Errorf("step %d: Release(%d) = %s, want %s", i, s.id, got, s.freed)
					}
					if r.Has(s.id) {
						t.Errorf("step %d: checkpoint %d still registered", i, s.id)
					}
				}
			}
		})
	}
	r := storage.NewSharedRegistry()
	r.Register(2, "b", "a")
	r.Register(1, "a")
	if got := fmt.Sprint(r.Checkpoints(), r.Handles(2), r.Users("a"), r.Users("zz")); got != "[1 2] [a b] [1 2] []" {
		t.Errorf("queries: %s", got)
	}
}
