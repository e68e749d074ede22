package scheduler

import "slices"

// Heartbeats tracks when each peer was last heard from and tells which have
// been silent for the timeout. Time is epoch milliseconds passed in by the
// caller; Heartbeats never reads a clock. It is not safe for concurrent use:
// its owner's loop drives it.
type Heartbeats struct {
	timeout int64
	last    map[string]int64
}

// NewHeartbeats returns a tracker that considers a peer lost once
// timeoutMillis have passed since it was last seen.
func NewHeartbeats(timeoutMillis int64) *Heartbeats {
	return &Heartbeats{timeout: timeoutMillis, last: make(map[string]int64)}
}

// Timeout returns the timeout in milliseconds.
func (h *Heartbeats) Timeout() int64 { return h.timeout }

// Seen records that peer was heard from at now, starting to track it if it
// was not tracked. A time earlier than the last one recorded is ignored.
func (h *Heartbeats) Seen(peer string, now int64) {
	if last, ok := h.last[peer]; !ok || now > last {
		h.last[peer] = now
	}
}

// Forget stops tracking peer.
func (h *Heartbeats) Forget(peer string) { delete(h.last, peer) }

// LastSeen returns when peer was last heard from, if it is tracked.
func (h *Heartbeats) LastSeen(peer string) (int64, bool) {
	t, ok := h.last[peer]
	return t, ok
}

// Len returns the number of peers tracked.
func (h *Heartbeats) Len() int { return len(h.last) }

// Expire returns the peers silent for the timeout or longer at now, sorted,
// and stops tracking them, so each loss is reported once.
func (h *Heartbeats) Expire(now int64) []string {
	var lost []string
	for peer, last := range h.last {
		if now-last >= h.timeout {
			lost = append(lost, peer)
		}
	}
	for _, p := range lost {
		delete(h.last, p)
	}
	slices.Sort(lost)
	return lost
}

// NextDeadline returns the earliest time at which a tracked peer will have
// been silent for the timeout, if any peer is tracked.
func (h *Heartbeats) NextDeadline() (int64, bool) {
	if len(h.last) == 0 {
		return 0, false
	}
	first := true
	var earliest int64
	for _, last := range h.last {
		if d := last + h.timeout; first || d < earliest {
			earliest, first = d, false
		}
	}
	return earliest, true
}
