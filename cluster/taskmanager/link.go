package taskmanager

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/scheduler"
)

// This file is the TaskManager's link to the ResourceManager: a state
// machine without I/O that decides when to open a session, when it is
// registered, when to send heartbeats, when the ResourceManager is silent
// or gone, and how long to back off before the next session. It returns
// what to open, close, report and log, and the slot messages to hand to
// the slot offers (linkEffect); the TaskManager's owner goroutine carries
// that out. trace_test.go drives it directly.

// rmPeer names the ResourceManager in the heartbeat tracker.
const rmPeer = "resourcemanager"

// linkEvent is an input of the link.
type linkEvent interface{ isLinkEvent() }

// lkConnect: the owner is idle; workers is how many workers it has. A
// new session opens when none is open, no worker is left and the backoff
// has passed.
type lkConnect struct{ workers int }

// lkMessage: message m arrived on session gen.
type lkMessage struct {
	gen uint64
	m   *clusterpb.ResourceManagerMessage
}

// lkEnded: the stream of session gen ended with err.
type lkEnded struct {
	gen uint64
	err error
}

// lkReported: a heartbeat with the slot report was queued (ok) or the
// queue was full.
type lkReported struct{ ok bool }

// lkTick: the link's deadline has come.
type lkTick struct{}

// lkShutdown: the TaskManager shuts down: the session ends for reason and
// no new one opens.
type lkShutdown struct{ reason string }

func (lkConnect) isLinkEvent()  {}
func (lkMessage) isLinkEvent()  {}
func (lkEnded) isLinkEvent()    {}
func (lkReported) isLinkEvent() {}
func (lkTick) isLinkEvent()     {}
func (lkShutdown) isLinkEvent() {}

// linkEffect is an output of the link, to carry out in order.
type linkEffect interface{ isLinkEffect() }

// lxOpen: open session gen: connect and send Register.
type lxOpen struct{ gen uint64 }

// lxClose: close session gen (cancel its stream).
type lxClose struct{ gen uint64 }

// lxReport: send a heartbeat with the slot report; answer lkReported.
type lxReport struct{}

// lxAllocate and lxFree hand the ResourceManager's slot messages to the
// slot offers.
type lxAllocate struct{ a *clusterpb.AllocateSlot }
type lxFree struct{ f *clusterpb.FreeSlotsRequest }

// lxSessionLost: the session ended: stop the workers and free the slots.
type lxSessionLost struct{}

// lxLog: log msg with args at level.
type lxLog struct {
	level slog.Level
	msg   string
	args  []any
}

func (lxOpen) isLinkEffect()        {}
func (lxClose) isLinkEffect()       {}
func (lxReport) isLinkEffect()      {}
func (lxAllocate) isLinkEffect()    {}
func (lxFree) isLinkEffect()        {}
func (lxSessionLost) isLinkEffect() {}
func (lxLog) isLinkEffect()         {}

type linkPhase int

const (
	linkDown       linkPhase = iota // no session
	linkConnecting                  // Register sent, no Registered yet
	linkRegistered
)

// rmLink is the state of the TaskManager's sessions with the
// ResourceManager. Not safe for concurrent use.
type rmLink struct {
	rmAddress string
	// timeout is heartbeat.timeout: how long Registered may take, and the
	// heartbeat timeout when Registered names none.
	timeout                int64
	backoffMin, backoffMax int64

	phase       linkPhase
	gen         uint64 // of the current session, or the last one
	openedAt    int64
	rmID        string
	interval    int64 // ms, from Registered
	hb          *scheduler.Heartbeats
	nextBeat    int64
	disconnect  string // the reason the ResourceManager gave, if any
	reconnectAt int64
	backoff     int64 // the wait after the next failure
	stopped     bool  // shutting down: no new sessions

	fx []linkEffect // of the current step
}

func newRMLink(cfg Config) *rmLink {
	return &rmLink{rmAddress: cfg.ResourceManagerAddress, timeout: cfg.HeartbeatTimeout.Milliseconds(),
		backoffMin: cfg.ReconnectBackoff.Milliseconds(), backoffMax: cfg.ReconnectBackoffMax.Milliseconds(),
		backoff: cfg.ReconnectBackoff.Milliseconds()}
}

// registered tells whether a session is open and registered.
func (l *rmLink) registered() bool { return l.phase == linkRegistered }

// Step applies e at now and returns the effects.
func (l *rmLink) Step(now int64, e linkEvent) []linkEffect {
	switch e := e.(type) {
	case lkConnect:
		if !l.stopped && l.phase == linkDown && e.workers == 0 && now >= l.reconnectAt {
			l.gen++
			l.phase, l.openedAt, l.disconnect, l.rmID, l.hb = linkConnecting, now, "", "", nil
			l.log(slog.LevelDebug, "connecting to the ResourceManager", "address", l.rmAddress, "session", l.gen)
			l.emit(lxOpen{l.gen})
		}
	case lkMessage:
		if l.phase != linkDown && e.gen == l.gen {
			l.message(e.m, now)
		}
	case lkEnded:
		if l.phase == linkDown || e.gen != l.gen {
			break
		}
		reason := l.disconnect
		if reason == "" {
			reason = e.err.Error()
			if errors.Is(e.err, io.EOF) {
				reason = "the ResourceManager closed the session"
			}
		}
		l.end(reason, now)
	case lkReported:
		switch {
		case l.phase != linkRegistered:
		case e.ok:
			l.nextBeat = now + l.interval
		default:
			l.end("the ResourceManager does not read its messages", now)
		}
	case lkTick:
		switch {
		case l.phase == linkConnecting && now-l.openedAt >= l.timeout:
			l.end(fmt.Sprintf("no Registered within %v", time.Duration(l.timeout)*time.Millisecond), now)
		case l.phase == linkRegistered && len(l.hb.Expire(now)) > 0:
			l.end(fmt.Sprintf("no heartbeat from the ResourceManager for %v", time.Duration(l.hb.Timeout())*time.Millisecond), now)
		case l.phase == linkRegistered && now >= l.nextBeat:
			l.emit(lxReport{})
		}
	case lkShutdown:
		l.stopped = true
		l.end(e.reason, now)
	default:
		panic(fmt.Sprintf("taskmanager: unknown link event %T", e))
	}
	fx := l.fx
	l.fx = nil
	return fx
}

// Deadline is when the link wants lkTick (or, with no session, lkConnect)
// next; workers is how many workers the TaskManager has.
func (l *rmLink) Deadline(workers int) (int64, bool) {
	switch l.phase {
	case linkDown:
		if !l.stopped && workers == 0 {
			return l.reconnectAt, true
		}
		return 0, false
	case linkConnecting:
		return l.openedAt + l.timeout, true
	default:
		next := l.nextBeat
		if d, ok := l.hb.NextDeadline(); ok && d < next {
			next = d
		}
		return next, true
	}
}

func (l *rmLink) emit(f linkEffect) { l.fx = append(l.fx, f) }

func (l *rmLink) log(level slog.Level, msg string, args ...any) {
	l.emit(lxLog{level: level, msg: msg, args: args})
}

func (l *rmLink) message(m *clusterpb.ResourceManagerMessage, now int64) {
	if l.phase == linkConnecting {
		r := m.GetRegistered()
		if r == nil {
			l.end(fmt.Sprintf("the ResourceManager answered Register with %T instead of Registered", m.GetMsg()), now)
			return
		}
		l.phase, l.rmID = linkRegistered, r.GetResourceManagerId()
		l.interval = r.GetHeartbeatIntervalMs()
		if l.interval <= 0 {
			l.interval = conf.HeartbeatInterval.Default().Milliseconds()
		}
		timeout := r.GetHeartbeatTimeoutMs()
		if timeout <= 0 {
			timeout = l.timeout
		}
		l.hb = scheduler.NewHeartbeats(timeout)
		l.hb.Seen(rmPeer, now)
		l.backoff = l.backoffMin
		l.log(slog.LevelInfo, "registered at the ResourceManager", "resourcemanager", l.rmID,
			"heartbeat_interval", time.Duration(l.interval)*time.Millisecond, "heartbeat_timeout", time.Duration(timeout)*time.Millisecond)
		l.emit(lxReport{})
		return
	}
	l.hb.Seen(rmPeer, now)
	switch msg := m.GetMsg().(type) {
	case *clusterpb.ResourceManagerMessage_Heartbeat:
	case *clusterpb.ResourceManagerMessage_AllocateSlot:
		l.emit(lxAllocate{msg.AllocateSlot})
	case *clusterpb.ResourceManagerMessage_FreeSlots:
		l.emit(lxFree{msg.FreeSlots})
	case *clusterpb.ResourceManagerMessage_Disconnect:
		l.disconnect = msg.Disconnect.GetReason()
		l.log(slog.LevelWarn, "the ResourceManager ends the session", "reason", l.disconnect)
	default:
		l.log(slog.LevelWarn, "unexpected message from the ResourceManager; ignored", "type", fmt.Sprintf("%T", m.GetMsg()))
	}
}

// end drops the session: its workers are stopped and its slots freed, and
// a new session opens after the backoff once no worker is left.
func (l *rmLink) end(reason string, now int64) {
	if l.phase == linkDown {
		return
	}
	wasRegistered := l.phase == linkRegistered
	l.phase = linkDown
	l.emit(lxClose{l.gen})
	if wasRegistered {
		l.log(slog.LevelWarn, "session with the ResourceManager ended; stopping workers and freeing slots", "reason", reason)
	} else if !l.stopped {
		l.log(slog.LevelWarn, "could not register at the ResourceManager", "address", l.rmAddress,
			"reason", reason, "retry_in", time.Duration(l.backoff)*time.Millisecond)
	}
	l.emit(lxSessionLost{})
	l.reconnectAt = now + l.backoff
	l.backoff = min(2*l.backoff, l.backoffMax)
}
