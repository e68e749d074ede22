package restapi

import "errors"

// Errors a rest.Backend returns to choose the HTTP status of the answer; wrap
// them with a message for the user (fmt.Errorf("%w: job %s is not
// running", restapi.ErrConflict, id)): the message is what the client sees in
// {"errors": [...]}. Any other error answers 500.
//
// The client (package rest/restclient) maps the statuses back, so errors.Is
// works on both sides of the wire.
var (
	// ErrNotFound: no such job (404).
	ErrNotFound = errors.New("rest: not found")
	// ErrBadRequest: the request cannot be served as asked (400), e.g. a
	// job graph that does not validate.
	ErrBadRequest = errors.New("rest: bad request")
	// ErrConflict: the job is not in a state that allows the operation
	// (409), e.g. a savepoint of a finished job.
	ErrConflict = errors.New("rest: conflict with the job's state")
	// ErrUnavailable: the cluster cannot serve the request now (503), e.g.
	// it is shutting down or not the leader.
	ErrUnavailable = errors.New("rest: service unavailable")
)

// Errors of JobResult.Err.
var (
	ErrJobFailed   = errors.New("rest: job failed")
	ErrJobCanceled = errors.New("rest: job was cancelled")
	ErrJobUnknown  = errors.New("rest: job ended in an unknown state")
)

// ErrUnauthorized: the request changes state and does not carry the
// endpoint's token (401).
var ErrUnauthorized = errors.New("rest: the request needs the REST token")
