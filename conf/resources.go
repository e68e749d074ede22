package conf

import (
	"errors"
	"strings"
	"time"
)

// Resource options: a TaskManager's host, resources and directories, and how
// the ResourceManager places slots and releases idle TaskManagers.

var (
	// TaskManagerHost is the address a TaskManager binds to and advertises.
	TaskManagerHost = String("taskmanager.host", "",
		"Address (host name or IP) a TaskManager binds its RPC endpoint to and advertises to the JobManager "+
			"and to other TaskManagers' workers. Set it where the host name does not resolve to a reachable address.").
		WithDefaultDoc("(none): the address taskmanager.bind-host names if that is one interface, else the host's name; " +
			"so 127.0.0.1 when neither is set")

	// TaskManagerBindHost is the address a TaskManager's RPC endpoint binds to.
	TaskManagerBindHost = String("taskmanager.bind-host", "",
		"Address of the network interface a TaskManager's RPC endpoint binds to, e.g. 0.0.0.0 for all interfaces. "+
			"Unlike Flink, whose default is 0.0.0.0, a standalone TaskManager binds loopback only until told "+
			"otherwise: set taskmanager.host (the address other hosts reach it at) or this option for a cluster of "+
			"several hosts. In a YARN container a TaskManager binds all interfaces and advertises the host's name.").
		WithDefaultDoc("(none): taskmanager.host if set, else 127.0.0.1 (loopback only); all interfaces in a YARN container")

	// TaskManagerCPUCores is the CPU a TaskManager declares.
	TaskManagerCPUCores = Float("taskmanager.cpu.cores", 0,
		"Number of CPU cores a TaskManager declares to the ResourceManager (fractions allowed); "+
			"each slot is given an equal share.").
		WithDefaultDoc("(none): taskmanager.numberOfTaskSlots").
		WithCheck(func(v float64) error {
			if v <= 0 {
				return errors.New("must be greater than 0")
			}
			return nil
		})

	// TaskManagerWorkingDir is a TaskManager's working directory.
	TaskManagerWorkingDir = String("process.taskmanager.working-dir", "",
		"Working directory of a TaskManager process: job binaries are cached and worker deployment files "+
			"are written there.").
		WithDefaultDoc("(none): in a YARN container a directory in the container's; elsewhere a directory under the system's " +
			"temporary directory, removed when the TaskManager stops (or, after a kill, by the next TaskManager to start)")

	// LogDir is where a process writes its log files and its workers' output.
	LogDir = String("env.log.dir", "",
		"Directory of log files. A TaskManager writes each worker's stdout and stderr there.").
		WithDefaultDoc("(none): log/ under the working directory")

	// EvenlySpreadOutSlots chooses how the ResourceManager places slots.
	EvenlySpreadOutSlots = Bool("cluster.evenly-spread-out-slots", false,
		"Whether the ResourceManager spreads each job's slots evenly over all TaskManagers (true) "+
			"or fills TaskManagers one after the other, leaving others idle (false).")

	// ResourceManagerTaskManagerTimeout is how long a TaskManager may stay idle before it is released.
	ResourceManagerTaskManagerTimeout = Duration("resourcemanager.taskmanager-timeout", 30*time.Second,
		"Time a TaskManager may hold no slot, while the demand does not need it, before the ResourceManager "+
			"releases it (stops its container on YARN; standalone TaskManagers are never released).").
		WithCheck(positiveDuration)

	// StartWorkerMaxFailureRate is how many TaskManagers may fail to start per minute before the
	// ResourceManager pauses asking for more (YARN).
	StartWorkerMaxFailureRate = Float("resourcemanager.start-worker.max-failure-rate", 10,
		"Number of TaskManager start failures per minute (a container the NodeManager did not start, or "+
			"whose TaskManager exited with an error) at which the ResourceManager stops asking for new "+
			"TaskManager containers for resourcemanager.start-worker.retry-interval, as Flink's active "+
			"resource managers do: a TaskManager that cannot start is not restarted in a tight loop.").
		WithCheck(func(f float64) error {
			if f <= 0 {
				return errors.New("must be positive")
			}
			return nil
		})

	// StartWorkerRetryInterval is the pause after too many TaskManager start failures.
	StartWorkerRetryInterval = Duration("resourcemanager.start-worker.retry-interval", 3*time.Second,
		"Time the ResourceManager waits before asking for new TaskManager containers once "+
			"resourcemanager.start-worker.max-failure-rate is reached.").
		WithCheck(positiveDuration)
)

func resourceOptions() []AnyOption {
	return []AnyOption{
		TaskManagerHost, TaskManagerBindHost, TaskManagerCPUCores, TaskManagerWorkingDir, LogDir,
		EvenlySpreadOutSlots, ResourceManagerTaskManagerTimeout, StartWorkerMaxFailureRate, StartWorkerRetryInterval,
	}
}

// Ports lists the ports a port specification allows, in order: a port, a
// range such as "50100-50200", or a comma-separated list of both, as
// taskmanager.rpc.port and taskmanager.data.port take (Flink's port
// options). 0 stands for any free port. A process binds the first port of
// the list that is free.
func Ports(spec string) ([]int, error) {
	if err := checkPortRange(spec); err != nil {
		return nil, &ValueError{Type: "port specification", Value: spec, Reason: err.Error()}
	}
	var ports []int
	for part := range strings.SplitSeq(spec, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, _ := parseInt(lo)
		b := a
		if isRange {
			b, _ = parseInt(hi)
		}
		for p := a; p <= b; p++ {
			ports = append(ports, p)
		}
	}
	return ports, nil
}
