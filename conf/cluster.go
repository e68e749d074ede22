package conf

import (
	"errors"
	"time"
)

// Cluster options: processes, ports, memory, heartbeats and high availability.

// Values of HighAvailabilityType.
const (
	HighAvailabilityNone      = "NONE"
	HighAvailabilityZooKeeper = "ZOOKEEPER"
	// HighAvailabilityFileSystem keeps job metadata in
	// high-availability.storageDir for a restarted JobManager (one
	// JobManager at a time, restarted by its supervisor or by YARN).
	HighAvailabilityFileSystem = "FILESYSTEM"
)

func positiveDuration(d time.Duration) error {
	if d <= 0 {
		return errors.New("must be longer than 0")
	}
	return nil
}

var (
	// HeartbeatInterval is how often the ResourceManager and each
	// TaskManager send each other heartbeats, and each worker sends one to
	// its JobMaster (the JobMaster sends none: a TaskManager notices a
	// silent JobManager through the ResourceManager, which runs in the same
	// process).
	//
	// Lower than Flink's 10 s: Sluice aims to detect a lost TaskManager and
	// recover within 5 s, which heartbeat.timeout bounds.
	HeartbeatInterval = Duration("heartbeat.interval", time.Second,
		"Interval between heartbeats: the ResourceManager and each TaskManager send each other one, and each worker "+
			"(the job's tasks on a TaskManager) sends one to its JobMaster. "+
			"Sluice's default is lower than Flink's 10 s, to recover from a lost TaskManager within 5 s.").
		WithCheck(positiveDuration)

	// HeartbeatTimeout is how long a peer may stay silent before it is
	// considered lost.
	//
	// Lower than Flink's 50 s, for recovery within 5 s.
	HeartbeatTimeout = Duration("heartbeat.timeout", 5*time.Second,
		"Time without a heartbeat after which a peer is considered lost: a TaskManager by the ResourceManager "+
			"(and the other way round), a worker by its JobMaster; the tasks it ran fail and restart from the latest "+
			"checkpoint. A broken connection is noticed at once; this bounds a peer that is silent with its "+
			"connection open (a frozen process or host, a network dropping packets). "+
			"Sluice's default is lower than Flink's 50 s, to recover within 5 s; raise it on networks "+
			"with long pauses. Must be longer than heartbeat.interval.").
		WithCheck(positiveDuration)

	// JobManagerRPCAddress is the host the JobManager (Dispatcher, ResourceManager, JobMasters) listens on.
	JobManagerRPCAddress = String("jobmanager.rpc.address", "",
		"Host of the JobManager for standalone clusters. On YARN the ApplicationMaster's host is used and this option is ignored.").
		WithDefaultDoc("(none): localhost for local and standalone clusters, so that a standalone JobManager binds loopback only; " +
			"set the JobManager's host name for TaskManagers on other hosts")

	// JobManagerBindHost is the address the JobManager's RPC endpoint binds
	// to.
	JobManagerBindHost = String("jobmanager.bind-host", "",
		"Address of the network interface the JobManager's RPC endpoint (ResourceManager, JobMasters, blobs) binds to, "+
			"e.g. 0.0.0.0 for all interfaces. Unlike Flink, whose default is 0.0.0.0, a standalone JobManager binds "+
			"loopback only until told otherwise: whoever reaches its ports can run code on the cluster. "+
			"On YARN the ApplicationMaster binds all interfaces of its container's host and this option is ignored.").
		WithDefaultDoc("(none): jobmanager.rpc.address if set, else 127.0.0.1 (loopback only)")

	// JobManagerRPCPort is the JobManager's RPC port.
	JobManagerRPCPort = Int("jobmanager.rpc.port", 6123,
		"RPC port of the JobManager for standalone clusters. On YARN the ApplicationMaster picks a free port.").
		WithCheck(portCheck)

	// JobManagerProcessMemory is the memory of the JobManager process (the ApplicationMaster container on YARN).
	JobManagerProcessMemory = Memory("jobmanager.memory.process.size", 1600*MiB,
		"Total memory of the JobManager process; on YARN, the memory requested for the ApplicationMaster container. "+
			"The default is that of Flink's shipped config.yaml.").
		WithCheck(AtLeast(64 * MiB))

	// TaskManagerNumberOfTaskSlots is the number of slots per TaskManager.
	TaskManagerNumberOfTaskSlots = Int("taskmanager.numberOfTaskSlots", 1,
		"Number of task slots per TaskManager: how many parallel subtasks (pipelines) one TaskManager runs.").
		WithCheck(AtLeast(1))

	// TaskManagerProcessMemory is the memory of a TaskManager process (its container on YARN).
	TaskManagerProcessMemory = Memory("taskmanager.memory.process.size", 1728*MiB,
		"Total memory of a TaskManager process; on YARN, the memory requested for each TaskManager container. "+
			"The default is that of Flink's shipped config.yaml.").
		WithCheck(AtLeast(64 * MiB))

	// TaskManagerResourceID is the TaskManager's resource id.
	TaskManagerResourceID = String("taskmanager.resource-id", "",
		"Resource id of the TaskManager, by which the ResourceManager knows it. On YARN it is the container id, "+
			"set by the ApplicationMaster.").
		WithDefaultDoc("(none): generated from the TaskManager's address and a random suffix")

	// TaskManagerRPCPort is the TaskManager's RPC port or port range.
	TaskManagerRPCPort = String("taskmanager.rpc.port", "0",
		"RPC port of a TaskManager: a port, a range such as 50100-50200, or a comma-separated list of both. "+
			"0 picks a free port, as needed when several TaskManagers share a host.").
		WithCheck(checkPortRange)

	// TaskManagerDataPort is the port, or the ports, a TaskManager's workers
	// exchange records on; see Ports.
	TaskManagerDataPort = String("taskmanager.data.port", "0",
		"Port on which a TaskManager's workers serve records to other workers: a port, a range such as 50100-50200, "+
			"or a comma-separated list of both such as 50100,50105-50110. 0 picks a free port. Every worker of "+
			"the TaskManager (one per job running there, and the next attempt's while the last one's exits) binds "+
			"the first free port, so give at least as many ports as workers may run at once; a worker finding "+
			"none free fails with an error naming them.").
		WithCheck(checkPortRange)

	// RESTPort is the port of the REST endpoint and web UI.
	RESTPort = Int("rest.port", 8081,
		"Port of the REST endpoint and web UI for standalone clusters. On YARN the ApplicationMaster picks a free port.").
		WithCheck(portCheck)

	// RESTAddress is the address clients reach the REST endpoint at.
	RESTAddress = String("rest.address", "",
		"Address clients use to reach the REST endpoint.").
		WithDefaultDoc("(none): jobmanager.rpc.address")

	// RESTBindAddress is the address the REST endpoint binds to.
	RESTBindAddress = String("rest.bind-address", "",
		"Address the REST endpoint binds to, e.g. 0.0.0.0 for all interfaces. Unlike Flink, whose default is "+
			"0.0.0.0, a standalone JobManager's REST endpoint binds loopback only until told otherwise: whoever reaches it "+
			"can submit a job binary, which runs on the TaskManagers. On YARN the ApplicationMaster binds all "+
			"interfaces of its container's host and this option is ignored.").
		WithDefaultDoc("(none): where the RPC endpoint binds (jobmanager.bind-host, else jobmanager.rpc.address, else 127.0.0.1)")

	// RESTServerMaxContentLength bounds the size of a request to the REST
	// endpoint, such as a job submission carrying the job binary.
	RESTServerMaxContentLength = Memory("rest.server.max-content-length", 256*MiB,
		"Maximum size of a request to the REST endpoint; a job submission carries the job binary. "+
			"Larger than Flink's 100 mb because Go job binaries are statically linked.").
		WithCheck(AtLeast(MemorySize(64 * KiB)))

	// RESTAsyncStoreDuration is how long the outcome of a savepoint, stop or
	// checkpoint request stays available for status polls.
	RESTAsyncStoreDuration = Duration("rest.async.store-duration", 5*time.Minute,
		"How long the REST endpoint keeps the outcome of a completed asynchronous operation "+
			"(savepoint, stop-with-savepoint, checkpoint) for clients to poll.").
		WithCheck(positiveDuration)

	// RESTFlameGraphEnabled turns on the flame graphs of
	// GET /jobs/:jobid/vertices/:vertexid/flamegraph (Flink's
	// rest.flamegraph.*, of which Sluice keeps the keys and defaults).
	RESTFlameGraphEnabled = Bool("rest.flamegraph.enabled", false,
		"Enables the flame graphs of a vertex (GET /jobs/:jobid/vertices/:vertexid/flamegraph and the dashboard's Flame Graph tab), "+
			"built from Go's profiler in the workers: ON_CPU from a CPU profile, FULL and OFF_CPU from goroutine samples.")
	// RESTFlameGraphCleanupInterval drops a vertex's cached flame-graph
	// samples not asked for this long.
	RESTFlameGraphCleanupInterval = Duration("rest.flamegraph.cleanup-interval", 10*time.Minute,
		"Time after which cached flame-graph samples are dropped if not asked for.").
		WithCheck(positiveDuration)
	// RESTFlameGraphRefreshInterval is the age at which a vertex's cached
	// samples are taken again.
	RESTFlameGraphRefreshInterval = Duration("rest.flamegraph.refresh-interval", time.Minute,
		"Time after which a vertex's flame-graph samples are outdated and taken again when asked for.").
		WithCheck(positiveDuration)
	// RESTFlameGraphNumSamples is how many goroutine samples a FULL or
	// OFF_CPU flame graph is built from.
	RESTFlameGraphNumSamples = Int("rest.flamegraph.num-samples", 100,
		"Number of goroutine samples a FULL or OFF_CPU flame graph is built from; an ON_CPU flame graph's CPU profile "+
			"runs for num-samples × delay-between-samples.").
		WithCheck(AtLeast(1))
	// RESTFlameGraphDelay is the time between two goroutine samples.
	RESTFlameGraphDelay = Duration("rest.flamegraph.delay-between-samples", 50*time.Millisecond,
		"Delay between two goroutine samples of a flame graph.").
		WithCheck(positiveDuration)
	// RESTFlameGraphStackDepth bounds the frames kept of each stack.
	RESTFlameGraphStackDepth = Int("rest.flamegraph.stack-depth", 100,
		"Maximum number of frames kept of a sampled stack (its innermost).").
		WithCheck(AtLeast(1))

	// HighAvailabilityType selects the high-availability service.
	HighAvailabilityType = Enum("high-availability.type", HighAvailabilityNone,
		[]string{HighAvailabilityNone, HighAvailabilityFileSystem, HighAvailabilityZooKeeper},
		"High-availability service that keeps job metadata for a restarted JobManager: NONE, or FILESYSTEM "+
			"(job graphs, binaries and checkpoint pointers in high-availability.storageDir). ZOOKEEPER is reserved for leader election among standby JobManagers.").
		WithDeprecatedKeys("high-availability")

	// HighAvailabilityStorageDir is where job metadata is kept for recovery.
	HighAvailabilityStorageDir = String("high-availability.storageDir", "",
		"File system path (e.g. hdfs:///sluice/ha) where job metadata is kept for recovering the JobManager; "+
			"required when high availability is enabled.").
		WithDefaultDoc("(none)").
		WithDeprecatedKeys("high-availability.zookeeper.storageDir")

	// HighAvailabilityClusterID separates the metadata of clusters sharing
	// a storage directory.
	HighAvailabilityClusterID = String("high-availability.cluster-id", "default",
		"ID of the cluster in high-availability.storageDir; on YARN it defaults to the application id.")

	// SlotRequestTimeout bounds how long a job waits for its slots.
	SlotRequestTimeout = Duration("slot.request.timeout", 5*time.Minute,
		"Time a JobMaster waits for the slots of an attempt before it fails the attempt.").
		WithCheck(positiveDuration)

	// HighAvailabilityZooKeeperQuorum lists the ZooKeeper servers.
	HighAvailabilityZooKeeperQuorum = String("high-availability.zookeeper.quorum", "",
		"ZooKeeper servers, host:port separated by commas, when high-availability.type is ZOOKEEPER.").
		WithDefaultDoc("(none)")
)

func clusterOptions() []AnyOption {
	return []AnyOption{
		HeartbeatInterval, HeartbeatTimeout,
		JobManagerRPCAddress, JobManagerBindHost, JobManagerRPCPort, JobManagerProcessMemory,
		TaskManagerNumberOfTaskSlots, TaskManagerProcessMemory, TaskManagerResourceID, TaskManagerRPCPort, TaskManagerDataPort,
		RESTPort, RESTAddress, RESTBindAddress, RESTServerMaxContentLength, RESTAsyncStoreDuration,
		RESTFlameGraphEnabled, RESTFlameGraphCleanupInterval, RESTFlameGraphRefreshInterval, RESTFlameGraphNumSamples,
		RESTFlameGraphDelay, RESTFlameGraphStackDepth,
		HighAvailabilityType, HighAvailabilityStorageDir, HighAvailabilityZooKeeperQuorum,
		HighAvailabilityClusterID, SlotRequestTimeout,
	}
}
