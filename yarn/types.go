package yarn

import (
	"fmt"
	"time"

	"github.com/sluice/sluice/hadoop"
)

// Resource is an amount of memory and virtual cores.
type Resource struct {
	MemoryMB int64
	VCores   int32
}

func (r Resource) String() string { return fmt.Sprintf("<memory:%d, vCores:%d>", r.MemoryMB, r.VCores) }

// Fits reports whether r is no larger than limit in every dimension.
func (r Resource) Fits(limit Resource) bool {
	return r.MemoryMB <= limit.MemoryMB && r.VCores <= limit.VCores
}

// Priority orders requests of one application; lower values are served
// first.
type Priority int32

// ApplicationState is YARN's YarnApplicationState.
type ApplicationState int32

// Application states (values as on the wire).
const (
	StateNew       ApplicationState = 1
	StateNewSaving ApplicationState = 2
	StateSubmitted ApplicationState = 3
	StateAccepted  ApplicationState = 4
	StateRunning   ApplicationState = 5
	StateFinished  ApplicationState = 6
	StateFailed    ApplicationState = 7
	StateKilled    ApplicationState = 8
)

var appStateNames = map[ApplicationState]string{
	StateNew: "NEW", StateNewSaving: "NEW_SAVING", StateSubmitted: "SUBMITTED", StateAccepted: "ACCEPTED",
	StateRunning: "RUNNING", StateFinished: "FINISHED", StateFailed: "FAILED", StateKilled: "KILLED",
}

func (s ApplicationState) String() string {
	if n, ok := appStateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("ApplicationState(%d)", int32(s))
}

// Terminal reports whether the application has ended.
func (s ApplicationState) Terminal() bool {
	return s == StateFinished || s == StateFailed || s == StateKilled
}

// FinalStatus is YARN's FinalApplicationStatus, as reported by the
// ApplicationMaster.
type FinalStatus int32

// Final statuses (values as on the wire).
const (
	FinalUndefined FinalStatus = 0
	FinalSucceeded FinalStatus = 1
	FinalFailed    FinalStatus = 2
	FinalKilled    FinalStatus = 3
	FinalEnded     FinalStatus = 4
)

func (s FinalStatus) String() string {
	switch s {
	case FinalUndefined:
		return "UNDEFINED"
	case FinalSucceeded:
		return "SUCCEEDED"
	case FinalFailed:
		return "FAILED"
	case FinalKilled:
		return "KILLED"
	case FinalEnded:
		return "ENDED"
	}
	return fmt.Sprintf("FinalStatus(%d)", int32(s))
}

// ContainerState is the state of a container as the RM or NM reports it.
type ContainerState int32

// Container states (values as on the wire).
const (
	ContainerNew       ContainerState = 1
	ContainerRunning   ContainerState = 2
	ContainerComplete  ContainerState = 3
	ContainerScheduled ContainerState = 4
)

func (s ContainerState) String() string {
	switch s {
	case ContainerNew:
		return "NEW"
	case ContainerRunning:
		return "RUNNING"
	case ContainerComplete:
		return "COMPLETE"
	case ContainerScheduled:
		return "SCHEDULED"
	}
	return fmt.Sprintf("ContainerState(%d)", int32(s))
}

// Container exit statuses YARN reports besides a process's own exit code
// (Hadoop's ContainerExitStatus).
const (
	ExitSuccess                  = 0
	ExitInvalid                  = -1000
	ExitAborted                  = -100 // released by the AM or lost with its node
	ExitDisksFailed              = -101
	ExitPreempted                = -102
	ExitKilledExceededVMem       = -103
	ExitKilledExceededPMem       = -104
	ExitKilledByAppMaster        = -105
	ExitKilledByResourceManager  = -106
	ExitKilledAfterAppCompletion = -107
	ExitKilledByContainerSched   = -108
	ExitKilledForExcessLogs      = -109
)

// ExitStatusName names the YARN exit statuses above; other values are the
// process's exit code.
func ExitStatusName(code int32) string {
	switch code {
	case ExitSuccess:
		return "SUCCESS"
	case ExitInvalid:
		return "INVALID"
	case ExitAborted:
		return "ABORTED"
	case ExitDisksFailed:
		return "DISKS_FAILED"
	case ExitPreempted:
		return "PREEMPTED"
	case ExitKilledExceededVMem:
		return "KILLED_EXCEEDED_VMEM"
	case ExitKilledExceededPMem:
		return "KILLED_EXCEEDED_PMEM"
	case ExitKilledByAppMaster:
		return "KILLED_BY_APPMASTER"
	case ExitKilledByResourceManager:
		return "KILLED_BY_RESOURCEMANAGER"
	case ExitKilledAfterAppCompletion:
		return "KILLED_AFTER_APP_COMPLETION"
	case ExitKilledByContainerSched:
		return "KILLED_BY_CONTAINER_SCHEDULER"
	case ExitKilledForExcessLogs:
		return "KILLED_FOR_EXCESS_LOGS"
	}
	return fmt.Sprintf("exit code %d", code)
}

// NodeState is a NodeManager's state.
type NodeState int32

// Node states (values as on the wire).
const (
	NodeNew             NodeState = 1
	NodeRunning         NodeState = 2
	NodeUnhealthy       NodeState = 3
	NodeDecommissioned  NodeState = 4
	NodeLost            NodeState = 5
	NodeRebooted        NodeState = 6
	NodeDecommissioning NodeState = 7
	NodeShutdown        NodeState = 8
)

func (s NodeState) String() string {
	names := [...]string{"", "NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONED", "LOST", "REBOOTED", "DECOMMISSIONING", "SHUTDOWN"}
	if s > 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("NodeState(%d)", int32(s))
}

// QueueState is a scheduler queue's state.
type QueueState int32

// Queue states (values as on the wire).
const (
	QueueStopped  QueueState = 1
	QueueRunning  QueueState = 2
	QueueDraining QueueState = 3
)

// LocalResourceType says how a NodeManager localizes a resource.
type LocalResourceType int32

// Local resource types (values as on the wire).
const (
	ResourceArchive LocalResourceType = 1 // unpacked archive (.zip, .tar.gz, .jar)
	ResourceFile    LocalResourceType = 2 // a file as is
	ResourcePattern LocalResourceType = 3 // a jar, partly unpacked by Pattern
)

// LocalResourceVisibility says who may share a localized resource.
type LocalResourceVisibility int32

// Local resource visibilities (values as on the wire).
const (
	VisibilityPublic      LocalResourceVisibility = 1
	VisibilityPrivate     LocalResourceVisibility = 2
	VisibilityApplication LocalResourceVisibility = 3
)

// URL is YARN's URL record for a local resource, e.g. hdfs://nn:8020/path.
type URL struct {
	Scheme   string
	Host     string
	Port     int32 // -1 or 0 when absent
	File     string
	UserInfo string
}

// LocalResource is a file a NodeManager downloads into the container's
// working directory before launch. Size and Timestamp must match the file
// (its length and modification time in milliseconds) or localization fails.
type LocalResource struct {
	URL        URL
	Size       int64
	Timestamp  int64
	Type       LocalResourceType
	Visibility LocalResourceVisibility
	Pattern    string
}

// ContainerLaunchContext is what a NodeManager needs to start a process.
type ContainerLaunchContext struct {
	// LocalResources maps the link name in the working directory to the
	// resource.
	LocalResources map[string]LocalResource
	Environment    map[string]string
	// Commands are joined with spaces by the NodeManager and run by a shell;
	// the usual <LOG_DIR> expansion applies.
	Commands []string
	// Tokens is a token storage document (hadoop.Credentials.Marshal) the
	// NodeManager writes to the container's HADOOP_TOKEN_FILE_LOCATION.
	Tokens      []byte
	ServiceData map[string][]byte
	// ACLs maps "VIEW_APP"/"MODIFY_APP" to an ACL string.
	ACLs map[string]string
}

// SubmissionContext describes an application to submit.
type SubmissionContext struct {
	ID   ApplicationID
	Name string
	// Queue; empty means the scheduler's default.
	Queue string
	// Priority of the application (larger is higher, with priority
	// scheduling); nil sends none, leaving it to YARN: the queue's default
	// application priority. An explicit 0 is sent, and overrides that
	// default.
	Priority *Priority
	// AMContainer launches the ApplicationMaster (ignored when UnmanagedAM).
	AMContainer ContainerLaunchContext
	// AMResource is the ApplicationMaster container's size.
	AMResource Resource
	// UnmanagedAM: the AM runs outside the cluster; the submitter fetches
	// the AMRMToken from the application report.
	UnmanagedAM bool
	// MaxAppAttempts; 0 means the cluster default.
	MaxAppAttempts int32
	// AttemptFailuresValidityInterval; 0 means attempts never expire.
	AttemptFailuresValidityInterval time.Duration
	// Type, e.g. "Apache Sluice"; empty means "YARN".
	Type string
	Tags []string
	// KeepContainersAcrossAttempts keeps running containers when the AM
	// restarts (work-preserving AM restart).
	KeepContainersAcrossAttempts bool
	// CancelTokensWhenComplete; nil means true (YARN's default).
	CancelTokensWhenComplete *bool
	NodeLabelExpression      string
}

// ApplicationReport is the ResourceManager's view of an application.
type ApplicationReport struct {
	ID                  ApplicationID
	CurrentAttempt      ApplicationAttemptID
	User                string
	Queue               string
	Name                string
	Type                string
	Tags                []string
	Host                string
	RPCPort             int32
	State               ApplicationState
	FinalStatus         FinalStatus
	Diagnostics         string
	TrackingURL         string
	OriginalTrackingURL string
	StartTime           time.Time
	FinishTime          time.Time // zero while running
	Progress            float32
	Unmanaged           bool
	Priority            Priority
	// AMRMToken is set for unmanaged applications once their attempt is
	// launched: the unmanaged AM authenticates with it.
	AMRMToken *hadoop.Token
	// ClientToAMToken authenticates clients to a secure AM.
	ClientToAMToken *hadoop.Token
	// UsedResources is the application's current allocation, when reported.
	UsedResources Resource
	NumContainers int32
}

// ClusterMetrics counts NodeManagers by state.
type ClusterMetrics struct {
	NodeManagers   int32
	Active         int32
	Decommissioned int32
	Lost           int32
	Unhealthy      int32
	Rebooted       int32
}

// NodeReport describes a NodeManager.
type NodeReport struct {
	ID            NodeID
	HTTPAddress   string
	Rack          string
	Used          Resource
	Capability    Resource
	NumContainers int32
	State         NodeState
	HealthReport  string
	Labels        []string
}

// QueueInfo describes a scheduler queue.
type QueueInfo struct {
	Name            string
	Capacity        float32
	MaximumCapacity float32
	CurrentCapacity float32
	State           QueueState
	Children        []QueueInfo
	Applications    []ApplicationReport
}

// Container is an allocation: a slice of a node the AM may launch a process
// in, proved by Token.
type Container struct {
	ID              ContainerID
	Node            NodeID
	NodeHTTPAddress string
	Resource        Resource
	Priority        Priority
	// Token is the container token the NodeManager checks at launch.
	Token               *hadoop.Token
	AllocationRequestID int64
	Version             int32
}

// ContainerStatus is a container's state, with its exit status once
// complete.
type ContainerStatus struct {
	ID          ContainerID
	State       ContainerState
	Diagnostics string
	ExitStatus  int32
	Capability  Resource
}

// ResourceRequest asks the scheduler for NumContainers containers of
// Capability at Priority on ResourceName (a host, a rack, or AnyResource).
// NumContainers is absolute: it replaces the count previously asked for the
// same (Priority, ResourceName, Capability).
type ResourceRequest struct {
	Priority      Priority
	ResourceName  string
	Capability    Resource
	NumContainers int32
	// RelaxLocality; nil means true.
	RelaxLocality       *bool
	NodeLabelExpression string
	AllocationRequestID int64
}

// AnyResource is the ResourceName that matches every node.
const AnyResource = "*"

// NMToken authorises an AM to talk to one NodeManager.
type NMToken struct {
	Node  NodeID
	Token *hadoop.Token
}
