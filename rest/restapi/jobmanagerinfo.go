package restapi

// ThreadInfo is one goroutine of a thread dump (Flink's
// ThreadDumpInfo.ThreadInfo): its header ("goroutine 1 [running]") as the
// thread's name, its whole stack as the thread's text.
type ThreadInfo struct {
	ThreadName            string `json:"threadName"`
	StringifiedThreadInfo string `json:"stringifiedThreadInfo"`
}

// ThreadDump is the body of GET /jobmanager/thread-dump.
type ThreadDump struct {
	ThreadInfos []ThreadInfo `json:"threadInfos"`
}

// JVMInfo is the "jvm" of GET /jobmanager/environment: for a Go process,
// its runtime's version (runtime.Version), its platform (GOOS/GOARCH) and
// its command-line arguments.
type JVMInfo struct {
	Version string   `json:"version"`
	Arch    string   `json:"arch"`
	Options []string `json:"options"`
}

// EnvironmentInfo is the body of GET /jobmanager/environment. A Go
// binary has no classpath: it is empty.
type EnvironmentInfo struct {
	JVM       JVMInfo  `json:"jvm"`
	Classpath []string `json:"classpath"`
}

// LogInfo is one file of LogList; MTime is epoch ms.
type LogInfo struct {
	Name  string `json:"name"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"`
}

// LogList is the body of GET /jobmanager/logs.
type LogList struct {
	Logs []LogInfo `json:"logs"`
}

// ApplicationsOverview is the body of GET /applications/overview (Flink
// 2.3's MultipleApplicationsDetails). Sluice has no applications, Flink's
// grouping of the jobs of one application-mode program: the list is
// empty; its jobs are at GET /jobs/overview.
type ApplicationsOverview struct {
	Applications []struct{} `json:"applications"`
}

// YARNApplication is the body of GET /jobmanager/yarn (Sluice's; Flink has
// no such endpoint): the YARN application the JobManager runs in and its
// containers, the ApplicationMaster's and the TaskManagers', held and
// lately ended. Enabled is false, with no containers, outside YARN.
type YARNApplication struct {
	Enabled       bool            `json:"enabled"`
	ApplicationID string          `json:"applicationId,omitempty"`
	AttemptID     string          `json:"attemptId,omitempty"`
	Containers    []YARNContainer `json:"containers"`
}

// YARNContainer is a container of the application.
type YARNContainer struct {
	ID string `json:"id"`
	// Role is "jobmanager" (the ApplicationMaster) or "taskmanager".
	Role string `json:"role"`
	// Node is the NodeManager (host:port), NodeHTTPAddress its web address.
	Node            string `json:"node"`
	NodeHTTPAddress string `json:"nodeHttpAddress,omitempty"`
	// State is ALLOCATED, LAUNCHING, RUNNING, LAUNCH_FAILED, RELEASED or
	// COMPLETE; ExitStatus and Diagnostics say how a COMPLETE one ended.
	State       string `json:"state"`
	ExitStatus  *int32 `json:"exitStatus,omitempty"`
	Diagnostics string `json:"diagnostics,omitempty"`
	MemoryMB    int64  `json:"memoryMB"`
	VCores      int32  `json:"vcores"`
	// Since is when the container entered its state, epoch ms (0: unknown).
	Since int64 `json:"since"`
}
