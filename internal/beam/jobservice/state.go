package jobservice

import (
	"fmt"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
)

// State is a job's state in the Beam job API.
type State = jobpb.JobState_Enum

// Event is what happens to a job.
type Event int

// Events.
const (
	// Run: the client asked to run the prepared job.
	Run Event = iota
	// Started: its harnesses and engine job are up.
	Started
	// Finished: the engine job ended successfully.
	Finished
	// Failed: starting or running it failed.
	Failed
	// Cancel: the client asked to cancel it.
	Cancel
	// Stopped: the cancelled run ended (whatever its outcome).
	Stopped
)

var eventNames = [...]string{"run", "started", "finished", "failed", "cancel", "stopped"}

func (e Event) String() string { return eventNames[e] }

// Terminal reports whether a job in s can change no more.
func Terminal(s State) bool {
	return s == jobpb.JobState_DONE || s == jobpb.JobState_FAILED || s == jobpb.JobState_CANCELLED ||
		s == jobpb.JobState_DRAINED || s == jobpb.JobState_UPDATED
}

// TransitionError is an event a job in its state cannot take.
type TransitionError struct {
	From  State
	Event Event
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("jobservice: a job in state %s cannot %s", e.From, e.Event)
}

// Next is the state after e in s: a pure function, so the job's lifecycle
// is the table below and its trace in testdata/states.txt.
//
//	STOPPED  --run-->  STARTING --started--> RUNNING --finished--> DONE
//	STARTING, RUNNING --failed--> FAILED
//	STOPPED --cancel--> CANCELLED
//	STARTING, RUNNING --cancel--> CANCELLING --stopped/finished/failed--> CANCELLED
func Next(s State, e Event) (State, error) {
	switch {
	case s == jobpb.JobState_STOPPED && e == Run:
		return jobpb.JobState_STARTING, nil
	case s == jobpb.JobState_STOPPED && e == Cancel:
		return jobpb.JobState_CANCELLED, nil
	case s == jobpb.JobState_STARTING && e == Started:
		return jobpb.JobState_RUNNING, nil
	case (s == jobpb.JobState_STARTING || s == jobpb.JobState_RUNNING) && e == Finished:
		return jobpb.JobState_DONE, nil
	case (s == jobpb.JobState_STARTING || s == jobpb.JobState_RUNNING) && e == Failed:
		return jobpb.JobState_FAILED, nil
	case (s == jobpb.JobState_STARTING || s == jobpb.JobState_RUNNING) && e == Cancel:
		return jobpb.JobState_CANCELLING, nil
	case s == jobpb.JobState_CANCELLING && (e == Stopped || e == Finished || e == Failed):
		return jobpb.JobState_CANCELLED, nil
	case s == jobpb.JobState_CANCELLING && (e == Cancel || e == Started):
		return s, nil
	}
	return s, &TransitionError{From: s, Event: e}
}
