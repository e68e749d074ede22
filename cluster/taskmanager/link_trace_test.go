package taskmanager

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/tracetest"
)

// linkTrace drives an rmLink from the lines of a trace. Times are ms.
// Events:
//
//	new [timeout=D] [backoff=D] [backoff-max=D]
//	connect NOW [workers=N]
//	registered NOW [interval=MS] [timeout=MS]    (Registered on the current session)
//	message NOW heartbeat|allocate|free|other|disconnect REASON...
//	stale NOW                                    (a heartbeat on the session before)
//	ended NOW [ERR...]                           (no ERR: io.EOF)
//	reported NOW ok|full
//	tick NOW
//	shutdown NOW REASON...
//	deadline [workers=N]
//
// Output lines are the effects; debug logs are left out.
type linkTrace struct {
	l *rmLink
}

func TestRMLinkTrace(t *testing.T) {
	tr := &linkTrace{}
	tracetest.Replay(t, "testdata/link.txt", tr.do)
}

func (tr *linkTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		cfg := Config{ResourceManagerAddress: "rm:6123", HeartbeatTimeout: 5 * time.Second,
			ReconnectBackoff: 100 * time.Millisecond, ReconnectBackoffMax: time.Second}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			d, err := time.ParseDuration(v)
			if err != nil {
				return "", err
			}
			switch k {
			case "timeout":
				cfg.HeartbeatTimeout = d
			case "backoff":
				cfg.ReconnectBackoff = d
			case "backoff-max":
				cfg.ReconnectBackoffMax = d
			default:
				return "", fmt.Errorf("unknown option %q", k)
			}
		}
		tr.l = newRMLink(cfg)
		return "", nil
	}
	if tr.l == nil {
		return "", errors.New("no link: start the block with new")
	}
	workers := func(args []string) (int, error) {
		for _, kv := range args {
			k, v, _ := strings.Cut(kv, "=")
			if k != "workers" {
				return 0, fmt.Errorf("unknown option %q", k)
			}
			return strconv.Atoi(v)
		}
		return 0, nil
	}
	if f[0] == "deadline" {
		n, err := workers(f[1:])
		if err != nil {
			return "", err
		}
		if at, ok := tr.l.Deadline(n); ok {
			return strconv.FormatInt(at, 10), nil
		}
		return "none", nil
	}
	if len(f) < 2 {
		return "", fmt.Errorf("%s: want a time", f[0])
	}
	now, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", err
	}
	args := f[2:]
	msg := func(m *clusterpb.ResourceManagerMessage) linkEvent { return lkMessage{gen: tr.l.gen, m: m} }
	var e linkEvent
	switch f[0] {
	case "connect":
		n, err := workers(args)
		if err != nil {
			return "", err
		}
		e = lkConnect{workers: n}
	case "registered":
		r := &clusterpb.Registered{ResourceManagerId: "rm-1"}
		for _, kv := range args {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", err
			}
			switch k {
			case "interval":
				r.HeartbeatIntervalMs = n
			case "timeout":
				r.HeartbeatTimeoutMs = n
			default:
				return "", fmt.Errorf("unknown option %q", k)
			}
		}
		e = msg(&clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Registered{Registered: r}})
	case "message", "stale":
		kind := "heartbeat"
		if len(args) > 0 {
			kind = args[0]
		}
		var m *clusterpb.ResourceManagerMessage
		switch kind {
		case "heartbeat":
			m = &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Heartbeat{Heartbeat: &clusterpb.Heartbeat{Seq: 1}}}
		case "allocate":
			m = &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_AllocateSlot{AllocateSlot: &clusterpb.AllocateSlot{
				Index: 0, AllocationId: "a1", JobId: "x", JobMasterAddress: "jm:6123"}}}
		case "free":
			m = &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_FreeSlots{FreeSlots: &clusterpb.FreeSlotsRequest{JobId: "x"}}}
		case "disconnect":
			m = &clusterpb.ResourceManagerMessage{Msg: &clusterpb.ResourceManagerMessage_Disconnect{Disconnect: &clusterpb.Disconnect{
				Reason: strings.Join(args[1:], " ")}}}
		case "other":
			m = &clusterpb.ResourceManagerMessage{}
		default:
			return "", fmt.Errorf("unknown message %q", kind)
		}
		e = msg(m)
		if f[0] == "stale" {
			e = lkMessage{gen: tr.l.gen - 1, m: m}
		}
	case "ended":
		cause := io.EOF
		if len(args) > 0 {
			cause = errors.New(strings.Join(args, " "))
		}
		e = lkEnded{gen: tr.l.gen, err: cause}
	case "reported":
		if len(args) != 1 || args[0] != "ok" && args[0] != "full" {
			return "", errors.New("reported: want ok or full")
		}
		e = lkReported{ok: args[0] == "ok"}
	case "tick":
		e = lkTick{}
	case "shutdown":
		e = lkShutdown{reason: strings.Join(args, " ")}
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	var out []string
	for _, x := range tr.l.Step(now, e) {
		switch x := x.(type) {
		case lxOpen:
			out = append(out, fmt.Sprintf("open #%d", x.gen))
		case lxClose:
			out = append(out, fmt.Sprintf("close #%d", x.gen))
		case lxReport:
			out = append(out, "report")
		case lxAllocate:
			out = append(out, fmt.Sprintf("allocate %s/%s", x.a.GetJobId(), x.a.GetAllocationId()))
		case lxFree:
			out = append(out, "free "+x.f.GetJobId())
		case lxSessionLost:
			out = append(out, "session-lost")
		case lxLog:
			if x.level < slog.LevelInfo {
				continue
			}
			s := strings.ToLower(x.level.String()) + " " + x.msg
			for i := 0; i+1 < len(x.args); i += 2 {
				s += fmt.Sprintf(" %v=%v", x.args[i], x.args[i+1])
			}
			out = append(out, s)
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", x))
		}
	}
	return strings.Join(out, "\n"), nil
}
