package yarn

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/ipc"
)

// Exception classes raised by YARN that Sluice acts on. Match them with
// errors.Is; the error itself is a *hadoop.RemoteError.
const (
	ErrYarn                            hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.YarnException"
	ErrApplicationNotFound             hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
	ErrApplicationAttemptNotFound      hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"
	ErrContainerNotFound               hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"
	ErrInvalidResourceRequest          hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"
	ErrApplicationMasterNotRegistered  hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"
	ErrInvalidApplicationMasterRequest hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException"
	ErrInvalidContainerRelease         hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.InvalidContainerReleaseException"
	ErrApplicationIDNotProvided        hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.ApplicationIdNotProvidedException"
	ErrInvalidAuxService               hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"
	ErrNMNotYetReady                   hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.NMNotYetReadyException"
	ErrInvalidContainer                hadoop.ExceptionClass = "org.apache.hadoop.yarn.exceptions.InvalidContainerException"
)

// Errors detected on the client side.
var (
	// ErrUnknownQueue: the submission names a queue the scheduler does not
	// have.
	ErrUnknownQueue = errors.New("yarn: unknown queue")
	// ErrExceedsMaximum: a requested resource is larger than the cluster's
	// maximum container capability.
	ErrExceedsMaximum = errors.New("yarn: resource exceeds the cluster maximum")
	// ErrInvalidSubmission: the submission context is incomplete or
	// inconsistent.
	ErrInvalidSubmission = errors.New("yarn: invalid submission")
	// ErrNoNMToken: no NMToken is known for the node a container is on.
	ErrNoNMToken = errors.New("yarn: no NMToken for node")
	// ErrNotRegistered: an AMClient call needs Register first.
	ErrNotRegistered = errors.New("yarn: application master not registered")
	// ErrApplicationFailed: a waited-for application ended unsuccessfully.
	ErrApplicationFailed = errors.New("yarn: application did not succeed")
	// ErrUnreachable: no ResourceManager accepted a connection (wrapping
	// the last dial error); the error names the addresses and the key that
	// configures them.
	ErrUnreachable = errors.New("yarn: cannot reach the ResourceManager")
	// ErrFallbackToSimple: a server (ResourceManager, NameNode) asked a
	// client with a Kerberos login to continue with SIMPLE authentication,
	// and ipc.client.fallback-to-simple-auth-allowed does not allow it. The
	// error names the server and the key. It is an authentication failure:
	// the connection is not retried.
	ErrFallbackToSimple = ipc.ErrFallbackToSimple
)

// QueueError reports a submission to a queue that does not exist.
type QueueError struct {
	Queue string
	Known []string // leaf queues the scheduler reported
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("yarn: queue %q does not exist (known leaf queues: %v)", e.Queue, e.Known)
}

func (e *QueueError) Unwrap() error { return ErrUnknownQueue }

// ApplicationError reports an application that ended FAILED or KILLED, or
// finished with a final status other than SUCCEEDED.
type ApplicationError struct {
	ID          ApplicationID
	State       ApplicationState
	FinalStatus FinalStatus
	Diagnostics string
}

func (e *ApplicationError) Error() string {
	return fmt.Sprintf("yarn: application %s ended %s (final status %s): %s", e.ID, e.State, e.FinalStatus, e.Diagnostics)
}

func (e *ApplicationError) Unwrap() error { return ErrApplicationFailed }
