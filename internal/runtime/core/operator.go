package core

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/internal/runtime/state"
	"github.com/sluice/sluice/internal/runtime/task"
	"github.com/sluice/sluice/internal/runtime/timer"
)

// NoTimestamp marks a record without an event timestamp.
const NoTimestamp = task.NoTimestamp

// MaxWatermark ends event time.
const MaxWatermark = task.MaxWatermark

// FinalCheckpoint is the checkpoint ID of the notification that the job
// finished: what an operator pre-committed at the end of its input may now
// be committed.
const FinalCheckpoint = task.FinalCheckpoint

// NoWatermark is an operator's current watermark before its first one.
const NoWatermark int64 = -1 << 63

// ErrNotKeyed is wrapped by the errors of using keyed state or timers in
// an operator whose input is not keyed (see Stream.KeyBy).
var ErrNotKeyed = errors.New("core: keyed state and timers need a keyed input")

// ErrNoSideOutput is wrapped by the error of emitting to a side output the
// operator did not declare (OperatorSpec.Sides).
var ErrNoSideOutput = errors.New("core: undeclared side output")

// Operator is an untyped operator: one instance per subtask (its New makes
// it), driven on the subtask's goroutine, so it needs no locks. Every call
// gets the subtask's Context.
//
// ProcessElement handles a record of input (0, or 1 for the second input
// of a two-input operator) with its event timestamp ts (or NoTimestamp).
// For a keyed input the record's encoded key is the current key while it
// runs: keyed state and timers are that key's.
//
// An operator may also implement Opener, Finisher, Closer, TimerHandler,
// WatermarkHandler, OperatorState and CheckpointListener.
type Operator interface {
	ProcessElement(ctx *Context, input int, r Record, ts int64) error
}

// Opener is an operator with set-up: Open runs before the first record,
// after RestoreState. Keyed state registered here is restored from the
// checkpoint the subtask starts from.
type Opener interface {
	Open(ctx *Context) error
}

// Finisher is an operator with final results: Finish runs once all inputs
// have ended (bounded input), before Close.
type Finisher interface {
	Finish(ctx *Context) error
}

// Closer is an operator holding resources: Close runs when the subtask
// ends, whether or not it failed.
type Closer interface {
	Close() error
}

// TimerHandler is a keyed operator with timers: OnTimer runs for every
// timer that fires, with the timer's key as the current key.
type TimerHandler interface {
	OnTimer(ctx *Context, t Timer) error
}

// WatermarkHandler is an operator that handles watermarks itself (holds
// them back, as Beam's watermark holds do). ProcessWatermark runs after the
// event-time timers up to wm have fired; it must forward a watermark with
// ctx.EmitWatermark when it wants one downstream. Operators without it
// forward every watermark.
type WatermarkHandler interface {
	ProcessWatermark(ctx *Context, wm int64) error
}

// OperatorState is an operator (or source) with state of its own besides
// keyed state: a source's positions, a sink's pre-committed transactions.
// SnapshotState runs at the checkpoint barrier on the subtask's goroutine;
// the entries are spread over the subtasks on restore (union: every
// subtask gets all of them). RestoreState runs before Open, with this
// subtask's share, only when the subtask starts from a checkpoint or
// savepoint that holds some.
type OperatorState interface {
	SnapshotState(ctx *Context, checkpointID int64) (entries [][]byte, union bool, err error)
	RestoreState(ctx *Context, entries [][]byte) error
}

// CheckpointListener is an operator that acts once a checkpoint is
// complete everywhere (a two-phase-commit sink commits), and with
// FinalCheckpoint once the whole job finished.
type CheckpointListener interface {
	NotifyCheckpointComplete(ctx *Context, checkpointID int64) error
}

// TimeDomain says whether a timer fires in event or processing time.
type TimeDomain int

// Time domains.
const (
	EventTime TimeDomain = iota
	ProcessingTime
)

func (d TimeDomain) String() string {
	if d == ProcessingTime {
		return "PROCESSING_TIME"
	}
	return "EVENT_TIME"
}

// Timer is a timer that fired: its key (the encoded key, also the current
// key), namespace and time.
type Timer struct {
	Key       string
	Namespace string
	Time      int64
	Domain    TimeDomain
}

// Context is an operator subtask's view of its place in the job, its
// outputs, time, keyed state and timers. One Context serves all calls of
// one subtask; it is only used on the subtask's goroutine.
type Context struct {
	tc    *task.Context
	emit  func(Record, int64) error
	wm    func(int64) error
	sides map[string]func(Record, int64) error
	// watermark is the operator's current input watermark.
	watermark int64
	keyed     *keyedRuntime
	batch     bool
}

// JobName is the job's name.
func (c *Context) JobName() string { return c.tc.Job }

// OperatorName is the operator's name.
func (c *Context) OperatorName() string { return c.tc.Node.Name }

// Subtask is this subtask's index in [0, Parallelism()).
func (c *Context) Subtask() int { return c.tc.Subtask }

// Parallelism is the operator's number of subtasks.
func (c *Context) Parallelism() int { return c.tc.Parallelism }

// MaxParallelism is the operator's number of key groups.
func (c *Context) MaxParallelism() int { return c.tc.MaxParallelism }

// Logger is scoped to the job, operator and subtask.
func (c *Context) Logger() *slog.Logger { return c.tc.Log }

// Batch reports whether the job runs in BATCH mode (final results only).
func (c *Context) Batch() bool { return c.batch }

// Checkpointing reports whether the job takes checkpoints.
func (c *Context) Checkpointing() bool { return c.tc.Checkpointing() }

// Clock is the processing-time clock.
func (c *Context) Clock() clock.Clock { return c.tc.Clock }

// Task is the engine's context of the subtask, for what the core API does
// not wrap (coordinator events, mail, file systems).
func (c *Context) Task() *task.Context { return c.tc }

// Emit emits r with event timestamp ts (or NoTimestamp) on the main
// output. r must be of the output's type.
func (c *Context) Emit(r Record, ts int64) error { return c.emit(r, ts) }

// EmitSide emits r with timestamp ts on the side output tag, declared by
// the operator's spec with r's type. Records to a tag no stream reads are
// dropped, as in Flink.
func (c *Context) EmitSide(tag string, r Record, ts int64) error {
	e, ok := c.sides[tag]
	if !ok {
		return fmt.Errorf("%w %q of operator %s", ErrNoSideOutput, tag, c.tc.Node.Label())
	}
	return e(r, ts)
}

// EmitWatermark forwards a watermark on every output.
func (c *Context) EmitWatermark(wm int64) error { return c.wm(wm) }

// CurrentWatermark is the operator's input watermark (NoWatermark before
// the first).
func (c *Context) CurrentWatermark() int64 { return c.watermark }

// CurrentProcessingTime is the processing time in epoch milliseconds.
func (c *Context) CurrentProcessingTime() int64 { return c.tc.Clock.NowMillis() }

func (c *Context) keyedOrErr() (*keyedRuntime, error) {
	if c.keyed == nil {
		return nil, fmt.Errorf("%w: operator %s", ErrNotKeyed, c.tc.Node.Label())
	}
	return c.keyed, nil
}

// CurrentKey is the encoded key of the record or timer being processed; ok
// is false outside keyed processing.
func (c *Context) CurrentKey() (key string, ok bool) {
	if c.keyed == nil {
		return "", false
	}
	return c.keyed.keyed.CurrentKey()
}

// SetCurrentKey makes key the current key of keyed state and timers (for
// work outside a record or timer, such as Finish). It fails for an
// operator that is not keyed.
func (c *Context) SetCurrentKey(key string) error {
	k, err := c.keyedOrErr()
	if err != nil {
		return err
	}
	k.keyed.SetCurrentKey(key)
	return nil
}

// RegisterEventTimer registers an event-time timer of the current key in
// namespace ns at ts. Timers are deduplicated by (key, namespace, time).
func (c *Context) RegisterEventTimer(ns string, ts int64) error {
	k, err := c.keyedOrErr()
	if err != nil {
		return err
	}
	return k.timers.RegisterEventTimer(ns, ts)
}

// DeleteEventTimer deletes an event-time timer of the current key.
func (c *Context) DeleteEventTimer(ns string, ts int64) error {
	k, err := c.keyedOrErr()
	if err != nil {
		return err
	}
	return k.timers.DeleteEventTimer(ns, ts)
}

// RegisterProcessingTimer registers a processing-time timer of the current
// key in namespace ns at ts (epoch milliseconds).
func (c *Context) RegisterProcessingTimer(ns string, ts int64) error {
	k, err := c.keyedOrErr()
	if err != nil {
		return err
	}
	return k.timers.RegisterProcessingTimer(ns, ts)
}

// DeleteProcessingTimer deletes a processing-time timer of the current key.
func (c *Context) DeleteProcessingTimer(ns string, ts int64) error {
	k, err := c.keyedOrErr()
	if err != nil {
		return err
	}
	return k.timers.DeleteProcessingTimer(ns, ts)
}

// ValueState returns the value state called name: one byte string per
// (key, namespace). Values are what the operator encodes (with its
// record Type's Encode, or its own encoding). Get the handles of an
// operator's states once, in Open: state registered there is restored
// from the checkpoint the subtask starts from.
func (c *Context) ValueState(name string) (*ValueState, error) {
	k, err := c.keyedOrErr()
	if err != nil {
		return nil, err
	}
	t, err := state.NewValueTable[string, string, []byte](k.keyed, name, state.TTL{})
	if err != nil {
		return nil, err
	}
	return &ValueState{t: t}, nil
}

// ListState returns the list state called name: a list of byte strings
// per (key, namespace).
func (c *Context) ListState(name string) (*ListState, error) {
	k, err := c.keyedOrErr()
	if err != nil {
		return nil, err
	}
	t, err := state.NewValueTable[string, string, [][]byte](k.keyed, name, state.TTL{})
	if err != nil {
		return nil, err
	}
	return &ListState{t: t}, nil
}

// MapState returns the map state called name: a map from string keys to
// byte strings per (key, namespace).
func (c *Context) MapState(name string) (*MapState, error) {
	k, err := c.keyedOrErr()
	if err != nil {
		return nil, err
	}
	t, err := state.NewValueTable[string, string, map[string][]byte](k.keyed, name, state.TTL{})
	if err != nil {
		return nil, err
	}
	return &MapState{t: t}, nil
}

// keyedRuntime is the keyed state and timers of a keyed operator subtask:
// the engine's state.Keyed and timer.Service over encoded keys (strings,
// which hash as their bytes do) and namespaces.
type keyedRuntime struct {
	keyed  *state.Keyed[string]
	timers *timer.Service[string, string]
	// keyBuf and last let a run of records of one key set it without
	// allocating.
	keyBuf []byte
	last   string
}

// setKey makes the encoded key in buf current. It allocates the key's
// string only when the key changes from the previous record's.
func (k *keyedRuntime) setKey(buf []byte) {
	if string(buf) != k.last {
		k.last = string(buf)
	}
	k.keyed.SetCurrentKey(k.last)
}
