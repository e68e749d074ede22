// Package watermark combines the watermarks of a task's input channels.
//
// A Valve is a state machine without I/O or clocks: it takes per-channel
// watermarks, idleness changes and ends of input, and says when the task's
// combined watermark advances or its idleness changes. The combined
// watermark is the minimum over active, aligned channels and never goes
// backwards.
package watermark

import "math"

// Min is the watermark before any has been seen.
const Min = math.MinInt64

// Max is the watermark that ends event time: every timer fires.
const Max = math.MaxInt64

type channel struct {
	wm      int64
	idle    bool
	ended   bool
	aligned bool // takes part in the minimum (active and caught up)
}

// Valve tracks the channels of one task's inputs.
type Valve struct {
	chans []channel
	last  int64 // last combined watermark emitted
	idle  bool  // last idleness emitted
}

// NewValve returns a valve for n channels, all active with no watermark.
func NewValve(n int) *Valve {
	v := &Valve{chans: make([]channel, n), last: Min}
	for i := range v.chans {
		v.chans[i] = channel{wm: Min, aligned: true}
	}
	return v
}

// Output is what a valve decided after an input event.
type Output struct {
	// Watermark is the new combined watermark when Advanced is set.
	Watermark int64
	Advanced  bool
	// Idle is the new idleness when IdleChanged is set.
	Idle        bool
	IdleChanged bool
}

// Current is the last combined watermark.
func (v *Valve) Current() int64 { return v.last }

// Idle reports whether all channels are idle or ended.
func (v *Valve) Idle() bool { return v.idle }

// Watermark records a watermark from channel ch. A watermark from an idle
// channel makes it active again.
func (v *Valve) Watermark(ch int, wm int64) Output {
	c := &v.chans[ch]
	if c.ended {
		return Output{}
	}
	var out Output
	if c.idle {
		c.idle = false
		out = v.updateIdle()
	}
	if wm > c.wm {
		c.wm = wm
	}
	if !c.aligned && c.wm >= v.last {
		c.aligned = true
	}
	return v.combine(out)
}

// SetIdle marks channel ch idle (true) or active (false).
func (v *Valve) SetIdle(ch int, idle bool) Output {
	c := &v.chans[ch]
	if c.ended || c.idle == idle {
		return Output{}
	}
	c.idle = idle
	if idle {
		c.aligned = false
	} else {
		c.aligned = c.wm >= v.last
	}
	out := v.updateIdle()
	return v.combine(out)
}

// End marks channel ch as finished: it no longer holds the watermark back.
func (v *Valve) End(ch int) Output {
	c := &v.chans[ch]
	if c.ended {
		return Output{}
	}
	c.ended, c.aligned, c.idle = true, false, false
	out := v.updateIdle()
	return v.combine(out)
}

func (v *Valve) updateIdle() Output {
	all := true
	for _, c := range v.chans {
		if !c.idle && !c.ended {
			all = false
			break
		}
	}
	// A valve whose channels all ended is not idle: it is done, and the
	// task ends instead.
	allEnded := true
	for _, c := range v.chans {
		if !c.ended {
			allEnded = false
			break
		}
	}
	if allEnded {
		all = false
	}
	if all == v.idle {
		return Output{}
	}
	v.idle = all
	return Output{Idle: all, IdleChanged: true}
}

func (v *Valve) combine(out Output) Output {
	min := int64(Max)
	any := false
	for _, c := range v.chans {
		if c.aligned {
			any = true
			if c.wm < min {
				min = c.wm
			}
		}
	}
	if !any {
		return out
	}
	if min > v.last {
		v.last = min
		out.Watermark, out.Advanced = min, true
		for i := range v.chans {
			c := &v.chans[i]
			if !c.aligned && !c.idle && !c.ended && c.wm >= v.last {
				c.aligned = true
			}
		}
	}
	return out
}
