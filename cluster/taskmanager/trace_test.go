package taskmanager

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice/sluice/cluster/clusterpb"
	"github.com/sluice/sluice/internal/tracetest"
)

// offersTrace drives slotOffers from the lines of a trace. Events:
//
//	new SLOTS
//	allocate INDEX JOB ALLOC [jm=ADDR]     (jm defaults to jm:6123; "-" leaves a field empty)
//	accept JOB ALLOC...                    (the offer of JOB's slots in flight ends; these are accepted)
//	fail JOB ERR...                        (the offer in flight fails)
//	free JOB [ALLOC...]                    (all of JOB's slots without ALLOC)
//	reset
//	slots
//	held JOB ALLOC...
//
// Output lines are the effects; debug logs are left out.
type offersTrace struct {
	o *slotOffers
	// inFlight is the allocations of each job's offer in flight, and its
	// JobMaster, as the effects announced them.
	inFlight map[string]ofOffer
}

func TestSlotOffersTrace(t *testing.T) {
	tr := &offersTrace{}
	tracetest.Replay(t, "testdata/offers.txt", tr.do)
}

func (tr *offersTrace) do(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty event")
	}
	if f[0] == "new" {
		if len(f) != 2 {
			return "", errors.New("new: want the number of slots")
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		tr.o, tr.inFlight = newSlotOffers(n), make(map[string]ofOffer)
		return "", nil
	}
	if tr.o == nil {
		return "", errors.New("no slot offers: start the block with new")
	}
	dash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	var e offerEvent
	switch f[0] {
	case "slots":
		var out []string
		for i, s := range tr.o.slots {
			if s.phase == slotFree {
				out = append(out, fmt.Sprintf("%d:free", i))
				continue
			}
			out = append(out, fmt.Sprintf("%d:%s:%s/%s", i, s.phase, s.jobID, s.allocationID))
		}
		return strings.Join(out, " "), nil
	case "held":
		if len(f) < 2 {
			return "", errors.New("held: want a job")
		}
		if a, ok := tr.o.notHeld(f[1], f[2:]); ok {
			return "not held: " + a, nil
		}
		return "held", nil
	case "allocate":
		if len(f) < 4 {
			return "", errors.New("allocate: want INDEX JOB ALLOC")
		}
		i, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		a := &clusterpb.AllocateSlot{Index: int32(i), JobId: dash(f[2]), AllocationId: dash(f[3]), JobMasterAddress: "jm:6123"}
		for _, kv := range f[4:] {
			k, v, _ := strings.Cut(kv, "=")
			if k != "jm" {
				return "", fmt.Errorf("unknown option %q", k)
			}
			a.JobMasterAddress = dash(v)
		}
		e = oeAllocate{a}
	case "accept", "fail":
		if len(f) < 2 {
			return "", fmt.Errorf("%s: want a job", f[0])
		}
		off, ok := tr.inFlight[f[1]]
		if !ok {
			return "", fmt.Errorf("%s: job %s has no offer in flight", f[0], f[1])
		}
		delete(tr.inFlight, f[1])
		done := oeOfferDone{job: off.job, jobMaster: off.jobMaster}
		for _, s := range off.slots {
			done.allocs = append(done.allocs, s.GetAllocationId())
		}
		if f[0] == "accept" {
			done.accepted = f[2:]
		} else {
			done.err = errors.New(strings.Join(f[2:], " "))
		}
		e = done
	case "free":
		if len(f) < 2 {
			return "", errors.New("free: want a job")
		}
		e = oeFree{job: f[1], allocs: f[2:], reason: "freed by the trace"}
	case "reset":
		tr.inFlight = make(map[string]ofOffer)
		e = oeReset{}
	default:
		return "", fmt.Errorf("unknown event %q", f[0])
	}
	fx, _ := tr.o.Step(0, e)
	var out []string
	for _, f := range fx {
		switch f := f.(type) {
		case ofReport:
			var s []string
			for _, sl := range tr.o.slots {
				if sl.allocationID == "" {
					s = append(s, ".")
				} else {
					s = append(s, sl.jobID+"/"+sl.allocationID)
				}
			}
			out = append(out, "report "+strings.Join(s, " "))
		case ofOffer:
			tr.inFlight[f.job] = f
			var s []string
			for _, sl := range f.slots {
				s = append(s, fmt.Sprintf("%d/%s", sl.GetIndex(), sl.GetAllocationId()))
			}
			out = append(out, fmt.Sprintf("offer %s jm=%s %s", f.job, f.jobMaster, strings.Join(s, " ")))
		case ofStopWorkers:
			out = append(out, fmt.Sprintf("stop-workers %s/%s", f.job, f.alloc))
		case ofLog:
			if f.level < slog.LevelInfo {
				continue
			}
			s := strings.ToLower(f.level.String()) + " " + f.msg
			for i := 0; i+1 < len(f.args); i += 2 {
				s += fmt.Sprintf(" %v=%v", f.args[i], f.args[i+1])
			}
			out = append(out, s)
		default:
			out = append(out, fmt.Sprintf("unknown effect %T", f))
		}
	}
	return strings.Join(out, "\n"), nil
}
