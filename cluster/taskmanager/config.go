package taskmanager

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/sluice/sluice/cluster/rpcauth"
	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
	"github.com/sluice/sluice/security/kerberos"
)

// Config configures a TaskManager. The zero value of a field takes the
// default it documents.
type Config struct {
	// ID names the TaskManager to the ResourceManager and JobMasters.
	// Default: its RPC address and a random suffix, "host:port-1a2b3c".
	ID string
	// ResourceID is the TaskManager's id on its platform (the YARN
	// container id). Default: ID.
	ResourceID string
	// ResourceManagerAddress is the ResourceManager's gRPC address,
	// jobmanager.rpc.address:jobmanager.rpc.port. Required.
	ResourceManagerAddress string
	// Host is the address the RPC endpoint advertises, and that workers'
	// data endpoints bind to and advertise (taskmanager.host). Default:
	// BindHost when that is one interface, else the host's name (see
	// Addresses).
	Host string
	// BindHost is the interface the RPC endpoint binds to
	// (taskmanager.bind-host); 0.0.0.0 or :: is every interface. Default:
	// Host if set, else 127.0.0.1: a TaskManager nobody configured is
	// reachable from its own host only.
	BindHost string
	// RPCPort is the port, range or list of both the RPC endpoint binds
	// to, the first free one (taskmanager.rpc.port). Default: "0", any free
	// port.
	RPCPort string
	// DataPort is the port, range or list of both handed to workers for
	// their data endpoints, each binding the first free one
	// (taskmanager.data.port). Default: "0", any free port.
	DataPort string
	// Slots is the number of task slots (taskmanager.numberOfTaskSlots).
	// Default: 1.
	Slots int
	// CPUCores is the CPU the TaskManager declares, shared equally by its
	// slots (taskmanager.cpu.cores). Default: one per slot.
	CPUCores float64
	// MemoryBytes is the memory the TaskManager declares, shared equally by
	// its slots (taskmanager.memory.process.size). Default: 1728 MiB.
	MemoryBytes int64
	// WorkDir holds cached job binaries and worker deployment files
	// (process.taskmanager.working-dir). Default: a new directory under the
	// system's temporary directory.
	WorkDir string
	// LogDir receives each worker's stdout and stderr (env.log.dir).
	// Default: WorkDir/log.
	LogDir string
	// LogFile and StdoutFile name the files of LogDir that hold the
	// TaskManager's own log and standard output, which the JobManager serves
	// at GET /taskmanagers/:id/log and /taskmanagers/:id/stdout (the process
	// that runs the TaskManager writes them: cmd/taskmanager). Defaults:
	// Flink's "taskmanager.log" and "taskmanager.out".
	LogFile, StdoutFile string
	// MaxLogFileBytes bounds what ReadLog sends of one file: of a longer
	// file, only its last MaxLogFileBytes bytes. Default: 64 MiB.
	MaxLogFileBytes int64
	// HeartbeatTimeout bounds the wait for Registered after connecting and
	// an offer to a JobMaster; once registered, the ResourceManager's
	// heartbeat settings apply. Default: heartbeat.timeout's (5 s).
	HeartbeatTimeout time.Duration
	// StopGrace is how long a worker has to exit after SIGTERM before it is
	// killed with SIGKILL. Default: 5 s.
	StopGrace time.Duration
	// ReconnectBackoff is the wait before connecting to the
	// ResourceManager again after a session failed, doubling up to
	// ReconnectBackoffMax after each failure and reset by a registration.
	// Defaults: 100 ms and 5 s.
	ReconnectBackoff, ReconnectBackoffMax time.Duration
	// Security authenticates the TaskManager's RPCs: its server refuses
	// peers without it, its connections carry it, and its workers are
	// told to do the same (Security.WorkerConfiguration, over
	// WorkerConfiguration). Default: nil, no authentication (for tests of
	// the TaskManager alone; the processes set it from the configuration).
	Security *rpcauth.Security
	// DialOptions are used for connections to the ResourceManager and
	// JobMasters. Default: Security's.
	DialOptions []grpc.DialOption
	// ServerOptions are added to Security's for the TaskManager's gRPC
	// server.
	ServerOptions []grpc.ServerOption
	// Clock drives heartbeats and timeouts. Default: clock.System{}.
	Clock clock.Clock
	// Logger receives the TaskManager's logs. Default: discarded.
	Logger *slog.Logger
	// WorkerConfiguration is added to every worker's configuration, over
	// the job's: settings of the TaskManager's host the job cannot know,
	// such as the Kerberos login of a YARN container (the absolute path of
	// its shipped keytab). Default: none.
	WorkerConfiguration map[string]string
	// KerberosStatus, if set, returns the state of the TaskManager's
	// Kerberos login, sent with every heartbeat to the ResourceManager,
	// which the JobManager exports at GET /metrics. It is called on the
	// TaskManager's owner goroutine and must not block. Default: nil, the
	// TaskManager has no login.
	KerberosStatus func() kerberos.Status
	// Hardware describes the TaskManager's machine, sent when registering
	// and with every heartbeat (GET /taskmanagers shows it). It is called
	// on the TaskManager's owner goroutine and must not block. Default:
	// HostHardware.
	Hardware func() Hardware
}

// ConfigFrom reads a Config from a configuration: jobmanager.rpc.address
// (default localhost) and jobmanager.rpc.port, taskmanager.host,
// taskmanager.bind-host,
// taskmanager.rpc.port, taskmanager.data.port,
// taskmanager.numberOfTaskSlots, taskmanager.cpu.cores,
// taskmanager.memory.process.size, process.taskmanager.working-dir,
// env.log.dir and heartbeat.timeout.
func ConfigFrom(c *conf.Configuration) Config {
	cfg := Config{
		ResourceManagerAddress: net.JoinHostPort(cmp.Or(conf.Get(c, conf.JobManagerRPCAddress), "localhost"),
			strconv.Itoa(conf.Get(c, conf.JobManagerRPCPort))),
		Host:             conf.Get(c, conf.TaskManagerHost),
		BindHost:         conf.Get(c, conf.TaskManagerBindHost),
		RPCPort:          conf.Get(c, conf.TaskManagerRPCPort),
		DataPort:         conf.Get(c, conf.TaskManagerDataPort),
		Slots:            conf.Get(c, conf.TaskManagerNumberOfTaskSlots),
		MemoryBytes:      int64(conf.Get(c, conf.TaskManagerProcessMemory)),
		WorkDir:          conf.Get(c, conf.TaskManagerWorkingDir),
		LogDir:           conf.Get(c, conf.LogDir),
		HeartbeatTimeout: conf.Get(c, conf.HeartbeatTimeout),
	}
	if conf.IsSet(c, conf.TaskManagerCPUCores) {
		cfg.CPUCores = conf.Get(c, conf.TaskManagerCPUCores)
	}
	return cfg
}

func (c Config) withDefaults() Config {
	c.RPCPort = cmp.Or(c.RPCPort, "0")
	c.DataPort = cmp.Or(c.DataPort, "0")
	c.Slots = cmp.Or(c.Slots, conf.TaskManagerNumberOfTaskSlots.Default())
	if c.CPUCores == 0 {
		c.CPUCores = float64(c.Slots)
	}
	c.MemoryBytes = cmp.Or(c.MemoryBytes, int64(conf.TaskManagerProcessMemory.Default()))
	c.HeartbeatTimeout = cmp.Or(c.HeartbeatTimeout, conf.HeartbeatTimeout.Default())
	c.StopGrace = cmp.Or(c.StopGrace, 5*time.Second)
	c.LogFile = cmp.Or(c.LogFile, DefaultLogFile)
	c.StdoutFile = cmp.Or(c.StdoutFile, DefaultStdoutFile)
	if c.MaxLogFileBytes <= 0 {
		c.MaxLogFileBytes = 64 << 20
	}
	c.ReconnectBackoff = cmp.Or(c.ReconnectBackoff, 100*time.Millisecond)
	c.ReconnectBackoffMax = cmp.Or(c.ReconnectBackoffMax, 5*time.Second)
	if c.DialOptions == nil {
		c.DialOptions = c.Security.DialOptions()
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Hardware == nil {
		c.Hardware = HostHardware
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// The default names of the TaskManager's log and standard output files in
// its log directory (Flink's).
const (
	DefaultLogFile    = "taskmanager.log"
	DefaultStdoutFile = "taskmanager.out"
)

// loopbackHost is what a TaskManager binds and advertises when no address
// is configured.
const loopbackHost = "127.0.0.1"

// Addresses decides where the RPC endpoint binds and which host it
// advertises: bind is BindHost, else Host, else loopback; the advertised
// host is Host, else the bound interface when it is one, else hostname
// (bound to every interface).
func Addresses(host, bindHost, hostname string) (bind, advertise string) {
	bind = cmp.Or(bindHost, host, loopbackHost)
	if host != "" {
		return bind, host
	}
	if ip := net.ParseIP(bind); ip != nil && ip.IsUnspecified() {
		return bind, hostname
	}
	return bind, bind
}

// ErrInvalidConfig is matched by the error of Validate.
var ErrInvalidConfig = errors.New("taskmanager: invalid configuration")

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	if c.ResourceManagerAddress == "" {
		problems = append(problems, "ResourceManagerAddress is empty")
	} else if _, _, err := net.SplitHostPort(c.ResourceManagerAddress); err != nil {
		problems = append(problems, fmt.Sprintf("ResourceManagerAddress %q is not host:port", c.ResourceManagerAddress))
	}
	if _, err := conf.Ports(c.RPCPort); err != nil {
		problems = append(problems, "RPCPort: "+err.Error())
	}
	if _, err := conf.Ports(c.DataPort); err != nil {
		problems = append(problems, "DataPort: "+err.Error())
	}
	for _, f := range []struct{ key, name string }{{"LogFile", c.LogFile}, {"StdoutFile", c.StdoutFile}} {
		if checkLogName(f.name) != nil {
			problems = append(problems, fmt.Sprintf("%s %q: must be a file name, without a directory", f.key, f.name))
		}
	}
	if c.Slots < 1 {
		problems = append(problems, fmt.Sprintf("Slots %d: must be at least 1", c.Slots))
	}
	if c.CPUCores < 0 {
		problems = append(problems, fmt.Sprintf("CPUCores %v: must not be negative", c.CPUCores))
	}
	if c.MemoryBytes < 0 {
		problems = append(problems, fmt.Sprintf("MemoryBytes %d: must not be negative", c.MemoryBytes))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HeartbeatTimeout", c.HeartbeatTimeout}, {"StopGrace", c.StopGrace}, {"ReconnectBackoff", c.ReconnectBackoff}, {"ReconnectBackoffMax", c.ReconnectBackoffMax}} {
		if d.v < 0 {
			problems = append(problems, fmt.Sprintf("%s %v: must not be negative", d.name, d.v))
		}
	}
	if c.ReconnectBackoffMax < c.ReconnectBackoff {
		problems = append(problems, fmt.Sprintf("ReconnectBackoffMax %v: must be at least ReconnectBackoff %v", c.ReconnectBackoffMax, c.ReconnectBackoff))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
}
