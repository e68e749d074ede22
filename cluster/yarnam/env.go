// Package yarnam is the Sluice YARN ApplicationMaster's life: it reads what
// YARN and the Sluice client put into its container, registers with the
// ResourceManager, gives the JobManager components (the Host) a resource
// driver that acquires TaskManager containers, and when the Host ends the
// application, unregisters with its final status and deletes the
// application's staging directory.
//
// It also defines the contract between the client (cluster/yarndeploy)
// and the ApplicationMaster: the files in the staging directory and the
// environment variables of the ApplicationMaster's container.
package yarnam

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/security/kerberos"
	"github.com/sluice/sluice/yarn"
)

// Link names of the files the client stages, in the containers' working
// directories.
const (
	FileAppMaster   = "appmaster"     // the ApplicationMaster binary (cmd/appmaster)
	FileTaskManager = "taskmanager"   // the TaskManager binary (cmd/taskmanager)
	FileJob         = "job"           // the job binary, in application mode
	FileConfig      = conf.FileName   // the effective Sluice configuration
	FileHadoopConf  = "core-site.xml" // the client's effective Hadoop configuration
)

// The ApplicationMaster's files in its container's log directory, by
// Flink's names: its log, and its standard output and error.
const (
	FileJobManagerLog = "jobmanager.log"
	FileJobManagerOut = "jobmanager.out"
	FileJobManagerErr = "jobmanager.err"
)

// Environment variables the client sets for the ApplicationMaster.
const (
	// EnvStagingDir is the URI of the application's staging directory,
	// e.g. hdfs://nn:8020/user/alice/.sluice/application_1700000000000_0001.
	EnvStagingDir = "SLUICE_YARN_STAGING_DIR"
	// EnvTaskManagerFiles is the JSON object (link name → yarn.LocalResource)
	// of the files every TaskManager container gets, in base64: the
	// NodeManager writes environment values into a shell script between
	// double quotes, unescaped.
	EnvTaskManagerFiles = "SLUICE_YARN_TASKMANAGER_FILES"
	// EnvJob is the link name of the job binary in the ApplicationMaster's
	// working directory (application mode); empty for a session cluster.
	EnvJob = "SLUICE_YARN_JOB"
	// EnvJobProgram is the job program's arguments and dynamic properties
	// (application mode), a JSON JobProgram in base64.
	EnvJobProgram = "SLUICE_YARN_JOB_PROGRAM"
	// EnvHadoopUser is the user the application's processes act as on HDFS
	// (SIMPLE authentication), as in Hadoop.
	EnvHadoopUser = "HADOOP_USER_NAME"
	// EnvHadoopConfDir points Hadoop clients at core-site.xml; the client
	// sets it to the working directory, where the staged one is.
	EnvHadoopConfDir = "HADOOP_CONF_DIR"
	// WorkingDir is the container's working directory in environment
	// values (expanded by the container's shell).
	WorkingDir = "$PWD"
)

// Environment variables YARN sets in every container.
const (
	envContainerID = "CONTAINER_ID"
	envNMHost      = "NM_HOST"
	envLogDirs     = "LOG_DIRS"
)

// ErrEnvironment wraps every problem with the ApplicationMaster's
// container environment.
var ErrEnvironment = errors.New("yarnam: bad ApplicationMaster environment")

// Environment is what the ApplicationMaster learns from its container.
type Environment struct {
	// Container is the ApplicationMaster's container; its Attempt is the
	// application attempt.
	Container yarn.ContainerID
	// Host is the NodeManager's host, where the ApplicationMaster is
	// reachable.
	Host string
	// User is the HDFS user (HADOOP_USER_NAME).
	User string
	// Credentials are the container's tokens ($HADOOP_TOKEN_FILE_LOCATION);
	// AMRMToken is among them.
	Credentials *hadoop.Credentials
	AMRMToken   *hadoop.Token
	// StagingDir is the staging directory's URI.
	StagingDir *url.URL
	// TaskManagerFiles are the TaskManagers' local resources.
	TaskManagerFiles map[string]yarn.LocalResource
	// Job is the path of the job binary (application mode), or "".
	Job string
	// Program is how the job binary is run (application mode).
	Program JobProgram
	// LogDir is the container's (first) log directory.
	LogDir string
	// Conf is the Sluice configuration (config.yaml in SLUICE_CONF_DIR).
	Conf *conf.Configuration
	// Warnings of reading Conf (unknown or deprecated keys).
	Warnings []conf.Warning
	// Hadoop is the Hadoop configuration (HADOOP_CONF_DIR).
	Hadoop *hadoop.Configuration
	// QOP are the qualities of protection of the ResourceManager's and
	// NodeManagers' token connections on a secure cluster
	// (hadoop.rpc.protection); nil otherwise.
	QOP []hadoop.QOP
	// Kerberos is the ApplicationMaster's login on a secure cluster, from
	// the shipped keytab (hadoopenv.ContainerKerberos), set by Run; nil otherwise.
	Kerberos *kerberos.Login
}

// ReadEnvironment reads the ApplicationMaster's environment and reports
// every problem at once (errors.Is ErrEnvironment). getenv is usually
// os.Getenv.
func ReadEnvironment(getenv func(string) string) (*Environment, error) {
	var errs []error
	problem := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	env := &Environment{Host: getenv(envNMHost)}

	if id, err := yarn.ParseContainerID(getenv(envContainerID)); err != nil {
		problem("%s: %w (is this process running in a YARN container?)", envContainerID, err)
	} else {
		env.Container = id
	}
	if env.Host == "" {
		problem("%s is not set", envNMHost)
	}
	if u, err := hadoop.CurrentUser(getenv); err != nil {
		problem("%w", err)
	} else {
		env.User = u
	}
	if tf := getenv(hadoop.EnvTokenFile); tf == "" {
		problem("%s is not set: no AMRMToken", hadoop.EnvTokenFile)
	} else if creds, err := hadoop.ReadTokenFile(tf); err != nil {
		problem("%w", err)
	} else if t, ok := creds.TokenByKind(hadoop.KindAMRMToken); !ok {
		problem("the token file %s holds no %s", tf, hadoop.KindAMRMToken)
	} else {
		env.Credentials, env.AMRMToken = creds, t
	}
	if s := getenv(EnvStagingDir); s == "" {
		problem("%s is not set", EnvStagingDir)
	} else if u, err := url.Parse(s); err != nil || u.Scheme == "" || !path.IsAbs(u.Path) {
		problem("%s=%q is not an absolute URI", EnvStagingDir, s)
	} else {
		env.StagingDir = u
	}
	if s := getenv(EnvTaskManagerFiles); s == "" {
		problem("%s is not set", EnvTaskManagerFiles)
	} else if b, err := base64.StdEncoding.DecodeString(s); err != nil {
		problem("%s is not base64: %v", EnvTaskManagerFiles, err)
	} else if err := json.Unmarshal(b, &env.TaskManagerFiles); err != nil {
		problem("%s: %v", EnvTaskManagerFiles, err)
	}
	if j := getenv(EnvJob); j != "" {
		env.Job = "./" + j
	}
	if s := getenv(EnvJobProgram); s != "" {
		if b, err := base64.StdEncoding.DecodeString(s); err != nil {
			problem("%s is not base64: %v", EnvJobProgram, err)
		} else if err := json.Unmarshal(b, &env.Program); err != nil {
			problem("%s: %v", EnvJobProgram, err)
		}
	}
	if dirs := getenv(envLogDirs); dirs != "" {
		env.LogDir, _, _ = strings.Cut(dirs, ",")
	}
	c, warnings, err := conf.Load(conf.Sources{ConfDir: getenv(conf.EnvConfDir)})
	if err != nil {
		problem("%w", err)
	}
	env.Conf, env.Warnings = c, warnings
	if h, err := hadoop.LoadFromEnvironment(getenv); err != nil {
		problem("%w", err)
	} else {
		env.Hadoop = h
	}
	if err := errors.Join(errs...); err != nil {
		return env, fmt.Errorf("%w: %w", ErrEnvironment, err)
	}
	return env, nil
}

// JobProgram is how the ApplicationMaster runs the job program in
// application mode: its arguments, and the dynamic properties (the CLI's
// -D, key=value) it is given as SLUICE_DYNAMIC_PROPERTIES.
type JobProgram struct {
	Args    []string `json:"args,omitempty"`
	Dynamic []string `json:"dynamic,omitempty"`
}

// Encode is the value of EnvJobProgram.
func (p JobProgram) Encode() (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("yarnam: encoding the job program: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// EncodeTaskManagerFiles is the value of EnvTaskManagerFiles.
func EncodeTaskManagerFiles(files map[string]yarn.LocalResource) (string, error) {
	b, err := json.Marshal(files)
	if err != nil {
		return "", fmt.Errorf("yarnam: encoding the TaskManager files: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// mib converts a memory size to whole MiB, rounding up.
func mib(m conf.MemorySize) int64 { return (m.Bytes() + conf.MiB.Bytes() - 1) / conf.MiB.Bytes() }

// AppMasterResource is the ApplicationMaster container's size:
// jobmanager.memory.process.size and yarn.appmaster.vcores.
func AppMasterResource(c *conf.Configuration) yarn.Resource {
	return yarn.Resource{MemoryMB: mib(conf.Get(c, conf.JobManagerProcessMemory)), VCores: int32(conf.Get(c, conf.YarnAppMasterVcores))}
}

// TaskManagerResource is a TaskManager container's size:
// taskmanager.memory.process.size and yarn.containers.vcores (-1: one per
// slot, taskmanager.numberOfTaskSlots).
func TaskManagerResource(c *conf.Configuration) yarn.Resource {
	vcores := conf.Get(c, conf.YarnContainersVcores)
	if vcores == -1 {
		vcores = conf.Get(c, conf.TaskManagerNumberOfTaskSlots)
	}
	return yarn.Resource{MemoryMB: mib(conf.Get(c, conf.TaskManagerProcessMemory)), VCores: int32(vcores)}
}

// TaskManagerNodeLabel is the node label expression of the TaskManager
// containers: yarn.taskmanager.node-label, else yarn.application.node-label.
func TaskManagerNodeLabel(c *conf.Configuration) string {
	if l := conf.Get(c, conf.YarnTaskManagerNodeLabel); l != "" {
		return l
	}
	return conf.Get(c, conf.YarnApplicationNodeLabel)
}

// ContainerEnvironment is the environment of every TaskManager (and of
// the ApplicationMaster, with prefix containerized.master.env.): the Sluice
// and Hadoop configuration in the working directory, the HDFS user, and the
// variables set by keys with the given prefix.
func ContainerEnvironment(c *conf.Configuration, user, prefix string) map[string]string {
	env := map[string]string{
		conf.EnvConfDir:  WorkingDir,
		EnvHadoopConfDir: WorkingDir,
		EnvHadoopUser:    user,
	}
	for k, v := range c.Subset(prefix) {
		env[k] = v
	}
	return env
}

// Prefixes of the keys that set container environment variables (Flink's).
const (
	PrefixMasterEnv      = "containerized.master.env."
	PrefixTaskManagerEnv = "containerized.taskmanager.env."
)

// HAStorageDirName is the directory of the application's high-availability
// data in its staging directory (high-availability.storageDir by default).
const HAStorageDirName = "ha"

// JobManagerConf is the configuration of the JobManager the
// ApplicationMaster hosts: env.Conf with YARN's high-availability defaults,
// as Flink on YARN keeps HA data per application. Unless the configuration
// says otherwise, high-availability.type is FILESYSTEM, its storageDir the
// "ha" directory in the application's staging directory (deleted with it
// when the application ends), and high-availability.cluster-id the
// application id; so a new ApplicationMaster attempt recovers the running
// jobs. high-availability.type: NONE turns this off.
func JobManagerConf(env *Environment) *conf.Configuration {
	c := env.Conf
	if c == nil {
		c = conf.New()
	}
	over := map[string]string{}
	if _, set, _ := conf.Lookup(c, conf.HighAvailabilityType); !set {
		over[conf.HighAvailabilityType.Key()] = conf.HighAvailabilityFileSystem
	}
	if _, set, _ := conf.Lookup(c, conf.HighAvailabilityStorageDir); !set && env.StagingDir != nil {
		u := *env.StagingDir
		u.Path = path.Join(u.Path, HAStorageDirName)
		over[conf.HighAvailabilityStorageDir.Key()] = u.String()
	}
	// GET /jobmanager/logs, /log and /stdout serve the container's log
	// directory: jobmanager.log, jobmanager.out, jobmanager.err.
	if _, set, _ := conf.Lookup(c, conf.LogDir); !set && env.LogDir != "" {
		over[conf.LogDir.Key()] = env.LogDir
	}
	if _, set, _ := conf.Lookup(c, conf.HighAvailabilityClusterID); !set {
		over[conf.HighAvailabilityClusterID.Key()] = env.Container.Attempt.Application.String()
	}
	if len(over) == 0 {
		return c
	}
	return c.Merge(conf.FromMap(over, conf.Source{Name: "YARN ApplicationMaster"}))
}
