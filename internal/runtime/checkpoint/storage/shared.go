package storage

import (
	"slices"
	"sort"
)

// SharedRegistry counts which completed checkpoints use which shared files.
// Incremental checkpoints reuse files uploaded by earlier checkpoints, so a
// shared file may be deleted only once no retained checkpoint references it.
// The references of a checkpoint are kept in its metadata
// (Metadata.Shared), so the registry can always be rebuilt from the
// retained checkpoints (Storage does this when it first needs it).
//
// A handle is the string a checkpoint's metadata uses for the file (the
// second result of Location.CreateSharedFile); the same file has the same
// handle in every checkpoint of a job.
//
// SharedRegistry does no I/O. It is not safe for concurrent use; Storage
// guards its own.
type SharedRegistry struct {
	byCheckpoint map[int64][]string        // sorted, without duplicates
	users        map[string]map[int64]bool // handle → checkpoints referencing it
}

// NewSharedRegistry returns an empty registry.
func NewSharedRegistry() *SharedRegistry {
	return &SharedRegistry{byCheckpoint: make(map[int64][]string), users: make(map[string]map[int64]bool)}
}

// Register records that checkpoint id references handles. Registering a
// checkpoint again adds to its references; duplicates are counted once.
// A checkpoint registered with no handles is known to the registry (Has
// reports it) and holds nothing.
func (r *SharedRegistry) Register(id int64, handles ...string) {
	hs := r.byCheckpoint[id]
	for _, h := range handles {
		u := r.users[h]
		if u == nil {
			u = make(map[int64]bool)
			r.users[h] = u
		}
		if !u[id] {
			u[id] = true
			hs = append(hs, h)
		}
	}
	sort.Strings(hs)
	if hs == nil {
		hs = []string{}
	}
	r.byCheckpoint[id] = hs
}

// Release forgets checkpoint id and returns, sorted, the handles that no
// registered checkpoint references any more: the files that may now be
// deleted. Releasing an unknown checkpoint returns nothing.
func (r *SharedRegistry) Release(id int64) []string {
	hs, ok := r.byCheckpoint[id]
	if !ok {
		return nil
	}
	delete(r.byCheckpoint, id)
	var free []string
	for _, h := range hs {
		u := r.users[h]
		delete(u, id)
		if len(u) == 0 {
			delete(r.users, h)
			free = append(free, h)
		}
	}
	return free
}

// Has reports whether checkpoint id is registered.
func (r *SharedRegistry) Has(id int64) bool {
	_, ok := r.byCheckpoint[id]
	return ok
}

// Handles returns the handles checkpoint id references, sorted.
func (r *SharedRegistry) Handles(id int64) []string { return slices.Clone(r.byCheckpoint[id]) }

// Users returns the registered checkpoints that reference handle, ascending.
func (r *SharedRegistry) Users(handle string) []int64 {
	out := make([]int64, 0, len(r.users[handle]))
	for id := range r.users[handle] {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Checkpoints returns the registered checkpoints, ascending.
func (r *SharedRegistry) Checkpoints() []int64 {
	out := make([]int64, 0, len(r.byCheckpoint))
	for id := range r.byCheckpoint {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
