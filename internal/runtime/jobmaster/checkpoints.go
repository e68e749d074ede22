package jobmaster

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/internal/runtime/checkpoint"
	"github.com/sluice/sluice/internal/runtime/checkpoint/storage"
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
	// shared collects the handles of the shared files each checkpoint in
	// progress references, from the tasks' acknowledgements.
	shared map[checkpoint.ID][]string
	// bytes counts what the tasks wrote for each checkpoint in progress.
	bytes map[checkpoint.ID]int64
	// started describes each checkpoint in progress (ID, kind, trigger
	// time), for its failure's report.
	started map[checkpoint.ID]CheckpointStats
}

func newCheckpoints(j *Job, o *CheckpointOptions) (*checkpoints, error) {
	c := &checkpoints{j: j, opts: *o, fs: fs.Local{}, nextID: 1, coordState: map[checkpoint.ID]map[string][]byte{},
		locs: &locations{m: map[checkpoint.ID]*storage.Location{}}, savepoint: map[checkpoint.ID]savepointReq{},
		shared: map[checkpoint.ID][]string{}, bytes: map[checkpoint.ID]int64{}, started: map[checkpoint.ID]CheckpointStats{}}
	if err := o.Coordinator.Validate(); err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sluice-checkpoints-")
		if err != nil {
			return nil, fmt.Errorf("jobmaster: creating a checkpoint directory: %w", err)
		}
		dir, c.tempDir = tmp, tmp
	}
	fsys, p, err := c.j.opts.FileSystems.For(dir)
	if err != nil {
		return nil, fmt.Errorf("jobmaster: execution.checkpointing.dir %q: %w", dir, err)
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

func (c *checkpoints) newCoordinator(r *running) *checkpoint.Coordinator {
	all := append([]checkpoint.TaskID(nil), r.tasks...)
	var sources []checkpoint.TaskID
	for _, t := range all {
		if c.j.plan.Graph.Node(c.j.plan.Chains[t.Vertex].Nodes[0]).Inputs == 0 {
			sources = append(sources, t)
		}
	}
	return checkpoint.NewCoordinator(c.opts.Coordinator, sources, all, c.j.opts.Clock.NowMillis(), c.nextID)
}

// abortAll ends the coordinator of an attempt that is over.
func (c *checkpoints) abortAll(co *checkpoint.Coordinator) {
	c.nextID = co.NextID()
	for _, act := range co.Shutdown(errors.New("the job attempt ended")) {
		if ab, ok := act.(checkpoint.Abort); ok {
			c.aborted(ab)
		}
	}
}

// apply carries out the coordinator's decisions.
func (c *checkpoints) apply(r *running, co *checkpoint.Coordinator, actions []checkpoint.Action, res *Result, fail func(error)) {
	for len(actions) > 0 {
		act := actions[0]
		actions = actions[1:]
		switch act := act.(type) {
		case checkpoint.TriggerBarrier:
			actions = append(actions, c.trigger(r, co, act)...)
		case checkpoint.Complete:
			actions = append(actions, c.complete(co, act, res)...)
		case checkpoint.NotifyComplete:
			r.a.NotifyComplete(int64(act.ID))
		case checkpoint.Abort:
			r.a.Abort(int64(act.ID))
			c.aborted(act)
		case checkpoint.FailJob:
			fail(act.Reason)
		}
	}
}

// trigger starts a checkpoint at the attempt's tasks; the attempt
// snapshots the source coordinators and injects the barrier at the sources
// (atomically with each coordinator's snapshot).
func (c *checkpoints) trigger(r *running, co *checkpoint.Coordinator, t checkpoint.TriggerBarrier) []checkpoint.Action {
	if _, ok := c.started[t.ID]; !ok {
		st := CheckpointStats{ID: int64(t.ID), Kind: t.Kind, TriggerMillis: t.Timestamp}
		c.started[t.ID] = st
		c.j.opts.Listener.CheckpointTriggered(st)
		c.j.opts.Log.Info("triggering checkpoint", "checkpoint", t.ID, "kind", t.Kind.String(), "timestamp", t.Timestamp, "sources", len(t.Tasks))
	}
	loc, ok := c.locs.get(t.ID)
	if !ok {
		var err error
		if loc, err = c.store.NewCheckpointWriter(int64(t.ID)); err != nil {
			return c.declineAll(co, t, err)
		}
		c.locs.put(t.ID, loc)
	}
	c.coordState[t.ID] = map[string][]byte{}
	var out []checkpoint.Action
	for _, s := range r.a.TriggerCheckpoint(int64(t.ID), t.Kind, t.Tasks, loc) {
		out = append(out, c.coordinatorSnapshot(co, t.ID, s)...)
	}
	return out
}

// coordinatorSnapshot keeps a coordinator's state for the metadata of
// checkpoint id, or declines the checkpoint if the coordinator failed.
func (c *checkpoints) coordinatorSnapshot(co *checkpoint.Coordinator, id checkpoint.ID, s CoordinatorSnapshot) []checkpoint.Action {
	states, ok := c.coordState[id]
	if !ok {
		return nil // no longer in progress
	}
	if s.Err != nil {
		return co.Decline(c.j.opts.Clock.NowMillis(), id, checkpoint.TaskID{Vertex: s.Chain}, s.Err)
	}
	states[c.j.opIDs[c.j.plan.Chains[s.Chain].Nodes[0]]] = s.State
	return nil
}

// acked records what a task's snapshot for checkpoint id wrote and the
// shared files it references.
func (c *checkpoints) acked(id checkpoint.ID, ack Ack) {
	if len(ack.Shared) > 0 {
		c.shared[id] = append(c.shared[id], ack.Shared...)
	}
	c.bytes[id] += ack.Bytes
}

func (c *checkpoints) declineAll(co *checkpoint.Coordinator, t checkpoint.TriggerBarrier, err error) []checkpoint.Action {
	var out []checkpoint.Action
	now := c.j.opts.Clock.NowMillis()
	for _, id := range t.Tasks {
		out = append(out, co.Decline(now, t.ID, id, err)...)
	}
	return out
}

// triggerFailed ends checkpoint t, whose barrier was not injected, with
// err: it is reported as triggered, then failed.
func (c *checkpoints) triggerFailed(co *checkpoint.Coordinator, t checkpoint.TriggerBarrier, err error) []checkpoint.Action {
	st := CheckpointStats{ID: int64(t.ID), Kind: t.Kind, TriggerMillis: t.Timestamp}
	c.started[t.ID] = st
	c.j.opts.Listener.CheckpointTriggered(st)
	return co.TriggerFailed(c.j.opts.Clock.NowMillis(), t.ID, err)
}

// startSavepoint prepares the location of a savepoint about to be triggered.
func (c *checkpoints) startSavepoint(id checkpoint.ID, req savepointReq) error {
	dir := req.dir
	if dir == "" {
		dir = c.opts.SavepointDir
	}
	if dir == "" {
		return errors.New("no savepoint directory: give one (sluice savepoint JOB_ID DIRECTORY, sluice stop --savepointPath DIRECTORY) or set execution.checkpointing.savepoint-dir")
	}
	fsys, p, err := c.j.opts.FileSystems.For(dir)
	if err != nil {
		return fmt.Errorf("jobmaster: savepoint directory %q: %w", dir, err)
	}
	loc, err := storage.NewSavepointWriter(fsys, p, c.j.id, int64(id))
	if err != nil {
		return err
	}
	c.locs.put(id, loc)
	c.savepoint[id] = req
	return nil
}

// complete writes the metadata of a checkpoint every task acknowledged.
func (c *checkpoints) complete(co *checkpoint.Coordinator, cp checkpoint.Complete, res *Result) []checkpoint.Action {
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
	path, err := loc.WriteMetadata(metaCodec.Append(nil, m), dedupe(c.shared[cp.ID]))
	delete(c.shared, cp.ID)
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
	dir := qualify(c.baseURI(cp.ID), filepath.Dir(path))
	c.j.opts.Listener.CheckpointCompleted(CheckpointStats{ID: int64(cp.ID), Kind: cp.Kind, TriggerMillis: cp.Timestamp,
		EndMillis: c.j.opts.Clock.NowMillis(), Path: dir, Bytes: c.bytes[cp.ID]})
	bytes := c.bytes[cp.ID]
	delete(c.bytes, cp.ID)
	delete(c.started, cp.ID)
	req, isReq := c.savepoint[cp.ID]
	if isReq {
		delete(c.savepoint, cp.ID)
		req.reply <- savepointReply{path: dir}
	}
	if cp.Kind.IsSavepoint() {
		if cp.Kind.IsStop() {
			res.Savepoint = dir
		}
	} else {
		c.completed++
		res.Checkpoints++
		if _, err := c.store.Retain(c.opts.NumRetained); err != nil {
			c.j.opts.Log.Warn("discarding old checkpoints failed", "err", err)
		}
	}
	c.j.opts.Log.Info("completed checkpoint", "checkpoint", cp.ID, "kind", cp.Kind.String(), "bytes", bytes,
		"duration", time.Duration(c.j.opts.Clock.NowMillis()-cp.Timestamp)*time.Millisecond, "finished_tasks", len(cp.Finished), "path", dir)
	return co.Persisted(cp.ID)
}

// baseURI is the directory URI checkpoint id is written under: a
// savepoint's requested (or the default) savepoint directory, else
// execution.checkpointing.dir.
func (c *checkpoints) baseURI(id checkpoint.ID) string {
	if req, ok := c.savepoint[id]; ok && !req.kind.IsCheckpoint() {
		if req.dir != "" {
			return req.dir
		}
		return c.opts.SavepointDir
	}
	return c.opts.Dir
}

// qualify writes p, a path on the file system of the directory URI base,
// with base's scheme and authority (hdfs://namenode:8020/...), as Flink
// reports savepoint and checkpoint paths, so that the path printed can be
// given back as it is (sluice run -s). Local paths (no scheme, file://)
// stay plain paths.
func qualify(base, p string) string {
	if base == "" || strings.HasPrefix(base, "/") {
		return p
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || strings.EqualFold(u.Scheme, "file") {
		return p
	}
	q := url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}
	return q.String()
}

func (c *checkpoints) aborted(ab checkpoint.Abort) {
	st := c.started[ab.ID]
	delete(c.started, ab.ID)
	st.ID, st.EndMillis, st.Err = int64(ab.ID), c.j.opts.Clock.NowMillis(), ab.Reason
	c.j.opts.Listener.CheckpointFailed(st)
	c.j.opts.Log.Info("checkpoint aborted", "checkpoint", ab.ID, "err", ab.Reason)
	delete(c.coordState, ab.ID)
	delete(c.shared, ab.ID)
	delete(c.bytes, ab.ID)
	if req, ok := c.savepoint[ab.ID]; ok && !req.kind.IsCheckpoint() {
		delete(c.savepoint, ab.ID)
		req.reply <- savepointReply{err: fmt.Errorf("savepoint aborted: %w", ab.Reason)}
		if loc, ok := c.locs.get(ab.ID); ok {
			c.fs.RemoveAll(loc.Dir())
		}
		c.locs.del(ab.ID)
		return
	}
	if req, ok := c.savepoint[ab.ID]; ok {
		delete(c.savepoint, ab.ID)
		req.reply <- savepointReply{err: fmt.Errorf("checkpoint aborted: %w", ab.Reason)}
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
