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
