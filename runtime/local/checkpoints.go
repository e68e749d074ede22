package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/runtime/checkpoint"
	"github.com/sluice/sluice/runtime/checkpoint/storage"
	"github.com/sluice/sluice/runtime/codec"
	"github.com/sluice/sluice/runtime/task"
)

// checkpoints is the job's checkpointing side: storage, the locations of
// checkpoints in progress, and the uploader that writes task snapshots.
type checkpoints struct {
	j       *Job
	opts    CheckpointOptions
	fs      fs.FileSystem
	store   *storage.Storage
	tempDir string // removed at the end when Dir was not set
	nextID  checkpoint.ID
	// coordinator states by checkpoint, per operator ID, taken at trigger.
	coordState map[checkpoint.ID]map[string][]byte
	// locations of checkpoints in progress, shared with the uploader.
	locs      *locations
	savepoint map[checkpoint.ID]savepointReq
	completed int
	// shared maps the names of incremental snapshot files already uploaded
	// (or restored) to their handles, so each is uploaded once; the
	// uploader and the owner loop share it.
	shared *sharedFiles
}

type sharedFiles struct {
	mu struct{ syncMutex }
	m  map[string]string
	// byCheckpoint collects the handles referenced per checkpoint.
	byCheckpoint map[checkpoint.ID][]string
}

func (s *sharedFiles) get(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[name]
	return h, ok
}

func (s *sharedFiles) put(id checkpoint.ID, name, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = handle
	s.byCheckpoint[id] = append(s.byCheckpoint[id], handle)
}

func (s *sharedFiles) seed(name, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = handle
}

func (s *sharedFiles) take(id checkpoint.ID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := s.byCheckpoint[id]
	delete(s.byCheckpoint, id)
	return hs
}

func newCheckpoints(j *Job, o *CheckpointOptions) (*checkpoints, error) {
	c := &checkpoints{j: j, opts: *o, fs: fs.Local{}, nextID: 1, coordState: map[checkpoint.ID]map[string][]byte{},
		locs: &locations{m: map[checkpoint.ID]*storage.Location{}}, savepoint: map[checkpoint.ID]savepointReq{},
		shared: &sharedFiles{m: map[string]string{}, byCheckpoint: map[checkpoint.ID][]string{}}}
	if err := o.Coordinator.Validate(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sluice-checkpoints-")
		if err != nil {
			return nil, fmt.Errorf("local: creating a checkpoint directory: %w", err)
		}
		dir, c.tempDir = tmp, tmp
	}
	fsys, p, err := c.j.opts.FileSystems.For(dir)
	if err != nil {
		return nil, fmt.Errorf("local: execution.checkpointing.dir %q: %w", dir, err)
	}
	c.fs = fsys
	if c.store, err = storage.New(fsys, p, j.id); err != nil {
		return nil, err
	}
	if c.opts.NumRetained <= 0 {
		c.opts.NumRetained = 1
	}
	return c, nil
}

func (c *checkpoints) newCoordinator(a *attempt) *checkpoint.Coordinator {
	all := append([]checkpoint.TaskID(nil), a.order...)
	co := checkpoint.NewCoordinator(c.opts.Coordinator, a.sources, all, c.j.opts.Clock.NowMillis(), c.nextID)
	a.coordinator = co
	return co
}

// abortAll ends the coordinator of an attempt that is over.
func (c *checkpoints) abortAll(a *attempt) {
	co := a.coordinator
	c.nextID = co.NextID()
	for _, act := range co.Shutdown(errors.New("the job attempt ended")) {
		if ab, ok := act.(checkpoint.Abort); ok {
			c.aborted(ab)
		}
	}
}

// apply carries out the coordinator's decisions.
func (c *checkpoints) apply(a *attempt, co *checkpoint.Coordinator, actions []checkpoint.Action, res *Result, fail func(error)) {
	for len(actions) > 0 {
		act := actions[0]
		actions = actions[1:]
		switch act := act.(type) {
		case checkpoint.TriggerBarrier:
			actions = append(actions, c.trigger(a, co, act)...)
		case checkpoint.Complete:
			actions = append(actions, c.complete(a, co, act, res)...)
		case checkpoint.NotifyComplete:
			for _, id := range a.order {
				if !a.finished[id] {
					a.tasks[id].NotifyCheckpointComplete(int64(act.ID))
				}
			}
		case checkpoint.Abort:
			for _, id := range a.order {
				a.tasks[id].AbortCheckpoint(int64(act.ID))
			}
			c.aborted(act)
		case checkpoint.FailJob:
			fail(act.Reason)
		}
	}
}

// trigger snapshots the source coordinators and injects the barrier at the
// sources (atomically with each coordinator's snapshot).
func (c *checkpoints) trigger(a *attempt, co *checkpoint.Coordinator, t checkpoint.TriggerBarrier) []checkpoint.Action {
	if _, ok := c.locs.get(t.ID); !ok {
		loc, err := c.store.NewCheckpointWriter(int64(t.ID))
		if err != nil {
			return c.declineAll(co, t, err)
		}
		c.locs.put(t.ID, loc)
	}
	states := map[string][]byte{}
	byChain := map[int][]checkpoint.TaskID{}
	for _, id := range t.Tasks {
		byChain[id.Vertex] = append(byChain[id.Vertex], id)
	}
	chains := make([]int, 0, len(byChain))
	for ch := range byChain {
		chains = append(chains, ch)
	}
	sort.Ints(chains)
	var out []checkpoint.Action
	for _, ch := range chains {
		head := c.j.plan.Chains[ch].Nodes[0]
		tasks := byChain[ch]
		trigger := func() {
			for _, id := range tasks {
				a.tasks[id].TriggerCheckpoint(int64(t.ID), t.Kind)
			}
		}
		coord, ok := a.coords[head]
		if !ok {
			trigger()
			continue
		}
		st, err := coord.Checkpoint(int64(t.ID), trigger)
		if err != nil {
			err = fmt.Errorf("checkpointing the coordinator of %s: %w", c.j.plan.Graph.Node(head).Label(), err)
			now := c.j.opts.Clock.NowMillis()
			for _, id := range tasks {
				out = append(out, co.Decline(now, t.ID, id, err)...)
			}
			continue
		}
		states[c.j.opIDs[head]] = st
	}
	c.coordState[t.ID] = states
	return out
}

func (c *checkpoints) declineAll(co *checkpoint.Coordinator, t checkpoint.TriggerBarrier, err error) []checkpoint.Action {
	var out []checkpoint.Action
	now := c.j.opts.Clock.NowMillis()
	for _, id := range t.Tasks {
		out = append(out, co.Decline(now, t.ID, id, err)...)
	}
	return out
}

// startSavepoint prepares the location of a savepoint about to be triggered.
func (c *checkpoints) startSavepoint(id checkpoint.ID, req savepointReq) error {
	dir := req.dir
	if dir == "" {
		dir = c.opts.SavepointDir
	}
	if dir == "" {
		return errors.New("local: no savepoint directory: pass one or set execution.checkpointing.savepoint-dir")
	}
	fsys, p, err := c.j.opts.FileSystems.For(dir)
	if err != nil {
		return fmt.Errorf("local: savepoint directory %q: %w", dir, err)
	}
	loc, err := storage.NewSavepointWriter(fsys, p, c.j.id, int64(id))
	if err != nil {
		return err
	}
	c.locs.put(id, loc)
	c.savepoint[id] = req
	return nil
}

// metadata is the payload of a checkpoint's _metadata file.
type metadata struct {
	JobID     string
	ID        int64
	Kind      int
	Timestamp int64
	Operators []operatorMeta
	// Tasks are the task snapshot files (handles relative to the metadata).
	Tasks []string
}

type operatorMeta struct {
	ID             string
	Name           string
	Parallelism    int
	MaxParallelism int
	Coordinator    []byte
}

// taskFile is the content of one task snapshot file.
type taskFile struct {
	Operators map[string]operatorFile
}

type operatorFile struct {
	Subtask   int
	KeyGroups map[int][]byte
	State     [][]byte
	Union     bool
	// Manifests and Files (name → handle of a shared file) of incremental
	// keyed-state snapshots.
	Manifests [][]byte
	Files     map[string]string
}

var (
	metaCodec = codec.MustFor[metadata]()
	taskCodec = codec.MustFor[taskFile]()
)

// uploader writes task snapshots (the asynchronous part of checkpoints)
// and reports them to the owner loop.
func (c *checkpoints) uploader(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			// Free what queued snapshots hold (pebble snapshots, files).
			for {
				select {
				case u := <-c.j.uploads:
					if u.snap != nil {
						u.snap.Discard()
					}
				default:
					return
				}
			}
		case u := <-c.j.uploads:
			var ev any = taskFinished{attempt: u.attempt, task: u.task}
			if !u.finished {
				handle, err := c.write(u)
				ev = uploaded{attempt: u.attempt, task: u.task, id: checkpoint.ID(u.snap.ID), handle: handle, err: err}
			}
			select {
			case c.j.events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (c *checkpoints) write(u uploadReq) (handle string, err error) {
	defer func() {
		if err != nil {
			u.snap.Discard()
		}
	}()
	loc, ok := c.locs.get(checkpoint.ID(u.snap.ID))
	if !ok {
		return "", fmt.Errorf("checkpoint %d is no longer in progress", u.snap.ID)
	}
	tf := taskFile{Operators: map[string]operatorFile{}}
	for node, os := range u.snap.Operators {
		// The asynchronous part of the snapshot: encode the keyed state
		// the task froze at the barrier.
		if err := os.ResolveKeyGroups(); err != nil {
			return "", err
		}
		of := operatorFile{Subtask: u.task.Subtask, KeyGroups: os.KeyGroups, State: os.State, Union: os.Union, Manifests: os.Manifests}
		if len(os.Files) > 0 {
			files, err := c.uploadShared(loc, checkpoint.ID(u.snap.ID), os.Files)
			if os.ReleaseFiles != nil {
				os.ReleaseFiles()
			}
			if err != nil {
				return "", err
			}
			of.Files = files
		}
		tf.Operators[c.j.opIDs[node]] = of
	}
	f, handle, err := loc.CreateFile(fmt.Sprintf("task-%d-%d", u.task.Vertex, u.task.Subtask))
	if err != nil {
		return "", err
	}
	if _, err := f.Write(taskCodec.Append(nil, tf)); err != nil {
		f.Close()
		return "", err
	}
	return handle, f.Close()
}

// uploadShared uploads the files of an incremental snapshot that are not
// in shared storage yet, and returns every file's handle.
func (c *checkpoints) uploadShared(loc *storage.Location, id checkpoint.ID, files []task.LocalFile) (map[string]string, error) {
	out := make(map[string]string, len(files))
	for _, f := range files {
		if h, ok := c.shared.get(f.Name); ok {
			out[f.Name] = h
			c.shared.put(id, f.Name, h)
			continue
		}
		src, err := os.Open(f.Path)
		if err != nil {
			return nil, fmt.Errorf("uploading %s: %w", f.Path, err)
		}
		dst, handle, err := loc.CreateSharedFile(f.Name)
		if err == nil {
			_, err = io.Copy(dst, src)
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			return nil, fmt.Errorf("uploading %s: %w", f.Name, err)
		}
		out[f.Name] = handle
		c.shared.put(id, f.Name, handle)
	}
	return out, nil
}

// complete writes the metadata of a checkpoint every task acknowledged.
func (c *checkpoints) complete(a *attempt, co *checkpoint.Coordinator, cp checkpoint.Complete, res *Result) []checkpoint.Action {
	loc, ok := c.locs.get(cp.ID)
	if !ok {
		return co.PersistFailed(cp.ID, errors.New("no location"))
	}
	m := metadata{JobID: c.j.id, ID: int64(cp.ID), Kind: int(cp.Kind), Timestamp: cp.Timestamp}
	states := c.coordState[cp.ID]
	for _, n := range c.j.plan.Graph.Nodes {
		m.Operators = append(m.Operators, operatorMeta{ID: c.j.opIDs[n.ID], Name: n.Name, Parallelism: n.Parallelism,
			MaxParallelism: n.EffectiveMaxParallelism(), Coordinator: states[c.j.opIDs[n.ID]]})
	}
	ids := make([]checkpoint.TaskID, 0, len(cp.Snapshots))
	for id := range cp.Snapshots {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, k int) bool { return ids[i].Compare(ids[k]) < 0 })
	for _, id := range ids {
		m.Tasks = append(m.Tasks, cp.Snapshots[id].(string))
	}
	path, err := loc.WriteMetadata(metaCodec.Append(nil, m), dedupe(c.shared.take(cp.ID)))
	delete(c.coordState, cp.ID)
	c.locs.del(cp.ID)
	if err != nil {
		c.j.opts.Log.Warn("writing checkpoint metadata failed", "checkpoint", cp.ID, "err", err)
		if req, ok := c.savepoint[cp.ID]; ok {
			delete(c.savepoint, cp.ID)
			req.reply <- savepointReply{err: err}
		}
		return co.PersistFailed(cp.ID, err)
	}
	if req, ok := c.savepoint[cp.ID]; ok {
		delete(c.savepoint, cp.ID)
		dir := filepath.Dir(path)
		if cp.Kind.IsStop() {
			res.Savepoint = dir
		}
		req.reply <- savepointReply{path: dir}
	} else {
		c.completed++
		res.Checkpoints++
		if _, err := c.store.Retain(c.opts.NumRetained); err != nil {
			c.j.opts.Log.Warn("discarding old checkpoints failed", "err", err)
		}
	}
	c.j.opts.Log.Debug("checkpoint complete", "job", c.j.id, "checkpoint", cp.ID, "kind", cp.Kind.String(), "path", path)
	return co.Persisted(cp.ID)
}

func (c *checkpoints) aborted(ab checkpoint.Abort) {
	delete(c.coordState, ab.ID)
	c.shared.take(ab.ID)
	if req, ok := c.savepoint[ab.ID]; ok {
		delete(c.savepoint, ab.ID)
		req.reply <- savepointReply{err: fmt.Errorf("savepoint aborted: %w", ab.Reason)}
		if loc, ok := c.locs.get(ab.ID); ok {
			c.fs.RemoveAll(loc.Dir())
		}
		c.locs.del(ab.ID)
		return
	}
	if _, ok := c.locs.get(ab.ID); ok {
		c.locs.del(ab.ID)
		if err := c.store.Discard(int64(ab.ID)); err != nil {
			c.j.opts.Log.Debug("discarding an aborted checkpoint", "checkpoint", ab.ID, "err", err)
		}
	}
}

// jobEnded removes checkpoints the job no longer needs.
func (c *checkpoints) jobEnded(finished, cancelled bool) {
	switch {
	case c.tempDir != "":
		os.RemoveAll(c.tempDir)
	case finished || (cancelled && !c.opts.RetainOnCancellation):
		if err := c.store.DiscardJob(); err != nil {
			c.j.opts.Log.Warn("removing the job's checkpoints failed", "err", err)
		}
	}
}

func dedupe(hs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// locations maps checkpoints in progress to their storage locations; the
// owner loop writes it, the uploader reads it.
type locations struct {
	mu struct{ syncMutex }
	m  map[checkpoint.ID]*storage.Location
}

func (l *locations) get(id checkpoint.ID) (*storage.Location, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	loc, ok := l.m[id]
	return loc, ok
}

func (l *locations) put(id checkpoint.ID, loc *storage.Location) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[id] = loc
}

func (l *locations) del(id checkpoint.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
}

// readAll reads a file of fsys.
func readAll(fsys fs.FileSystem, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
