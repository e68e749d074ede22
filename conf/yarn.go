package conf

import (
	"errors"
	"strings"
	"time"
)

// YARN options: how the client submits the application and what the
// ApplicationMaster asks YARN for.

var (
	// YarnApplicationName names the YARN application.
	YarnApplicationName = String("yarn.application.name", "",
		"Name of the YARN application.").
		WithDefaultDoc("(none): pipeline.name, or a generated name")

	// YarnApplicationType is the application type shown by YARN.
	YarnApplicationType = String("yarn.application.type", "Sluice",
		"Application type reported to YARN (Flink reports \"Apache Flink\").")

	// YarnApplicationQueue is the YARN scheduler queue to submit to.
	YarnApplicationQueue = String("yarn.application.queue", "",
		"YARN queue to submit the application to.").
		WithDefaultDoc("(none): the scheduler's default queue")

	// YarnTags are tags attached to the YARN application.
	YarnTags = stringList("yarn.tags", ',', nil,
		"Tags of the YARN application, separated by commas (or a YAML list).").
		WithDefaultDoc("(none)")

	// YarnApplicationPriority is the priority of the YARN application.
	YarnApplicationPriority = Int("yarn.application.priority", -1,
		"Priority of the YARN application; larger is higher. Only effective when the YARN scheduler has "+
			"priority scheduling enabled. -1 leaves the priority to YARN.").
		WithCheck(AtLeast(-1))

	// YarnApplicationAttempts is how many times YARN may start the
	// ApplicationMaster. Get returns 0 when it is unset: the deployer then
	// uses 1, or 2 with high availability.
	YarnApplicationAttempts = Int("yarn.application-attempts", 0,
		"Number of ApplicationMaster attempts YARN may make, capped by YARN's yarn.resourcemanager.am.max-attempts. "+
			"A new attempt restarts the JobManager, which recovers its jobs from their latest checkpoints.").
		WithDefaultDoc("(none): 1, or 2 when high availability is enabled").
		WithCheck(AtLeast(1))

	// YarnApplicationAttemptFailuresValidityInterval is the window in which failed attempts count.
	YarnApplicationAttemptFailuresValidityInterval = Int("yarn.application-attempt-failures-validity-interval", 10000,
		"Time window, in milliseconds, in which failed ApplicationMaster attempts count towards yarn.application-attempts; "+
			"older failures are forgotten. -1 counts every failure (as in Flink).").
		WithCheck(func(v int) error {
			if v == -1 || v >= 0 {
				return nil
			}
			return errors.New("must be -1 (count every failure) or a number of milliseconds >= 0")
		})

	// YarnApplicationNodeLabel restricts the application's containers to nodes with a label.
	YarnApplicationNodeLabel = String("yarn.application.node-label", "",
		"YARN node label expression for the application's containers (the ApplicationMaster, and the TaskManagers "+
			"unless yarn.taskmanager.node-label is set).").
		WithDefaultDoc("(none)")

	// YarnTaskManagerNodeLabel restricts the TaskManager containers to nodes with a label.
	YarnTaskManagerNodeLabel = String("yarn.taskmanager.node-label", "",
		"YARN node label expression for the TaskManager containers.").
		WithDefaultDoc("(none): yarn.application.node-label")

	// YarnApplicationID is the id of a running YARN application to submit to (yarn-session target).
	YarnApplicationID = String("yarn.application.id", "",
		"Id of the running YARN application (session cluster) jobs are submitted to, e.g. application_1700000000000_0001.").
		WithDefaultDoc("(none)").
		WithCheck(func(s string) error {
			if s != "" && !strings.HasPrefix(s, "application_") {
				return errors.New(`must look like "application_<cluster timestamp>_<sequence number>"`)
			}
			return nil
		})

	// YarnProvidedLibDirs are pre-uploaded directories the application's containers read binaries from.
	YarnProvidedLibDirs = StringList("yarn.provided.lib.dirs", nil,
		"Directories on a shared file system (e.g. hdfs:///sluice/lib) holding pre-uploaded, world-readable files "+
			"the containers need, so the client does not upload them for each application. "+
			"YARN caches them on the nodes.").
		WithDefaultDoc("(none)")

	// YarnStagingDirectory is where the client uploads the application's files.
	YarnStagingDirectory = String("yarn.staging-directory", "",
		"Directory on the cluster file system where the client uploads the application's files.").
		WithDefaultDoc("(none): the submitting user's home directory")

	// YarnShipFiles are local files and directories uploaded with the application.
	YarnShipFiles = StringList("yarn.ship-files", nil,
		"Local files and directories uploaded with the application and placed in every container's working directory.").
		WithDefaultDoc("(none)").
		WithDeprecatedKeys("yarn.ship-directories")

	// YarnAppMasterVcores is the number of virtual cores of the ApplicationMaster container.
	YarnAppMasterVcores = Int("yarn.appmaster.vcores", 1,
		"Virtual cores requested for the ApplicationMaster container.").
		WithCheck(AtLeast(1))

	// YarnContainersVcores is the number of virtual cores of each TaskManager container.
	YarnContainersVcores = Int("yarn.containers.vcores", -1,
		"Virtual cores requested for each TaskManager container. -1 requests one per task slot "+
			"(taskmanager.numberOfTaskSlots). YARN only enforces it when CPU scheduling is enabled.").
		WithCheck(func(v int) error {
			if v == -1 || v >= 1 {
				return nil
			}
			return errors.New("must be -1 (one per slot) or at least 1")
		})

	// YarnHeartbeatInterval is the ApplicationMaster's heartbeat to the ResourceManager, in seconds.
	YarnHeartbeatInterval = Int("yarn.heartbeat.interval", 5,
		"Seconds between heartbeats of the ApplicationMaster to the YARN ResourceManager while it waits for nothing "+
			"(a whole number of seconds, as in Flink).").
		WithCheck(AtLeast(1))

	// YarnContainerRequestHeartbeatInterval is the ApplicationMaster's heartbeat while containers are requested.
	YarnContainerRequestHeartbeatInterval = Duration("yarn.heartbeat.container-request-interval", 500*time.Millisecond,
		"Interval between heartbeats of the ApplicationMaster to the YARN ResourceManager while containers are "+
			"requested: lower gets containers sooner, at the cost of load on the ResourceManager. "+
			"A bare number is milliseconds, as in Flink.").
		WithCheck(positiveDuration)

	// YarnRESTToken generates a REST token per application.
	YarnRESTToken = Bool("yarn.security.rest-token.enabled", true,
		"Generate a token for the application's REST endpoint (not in Flink): the client ships it to the ApplicationMaster "+
			"(mode 600, a private local resource) and keeps it in the application's staging directory, readable by its "+
			"owner only; the JobManager then refuses REST requests that change state without it (see "+
			"security.rest.token-file), except GET /jobs/:id/yarn-cancel and yarn-stop through the ResourceManager's web "+
			"proxy, and sluice commands read it from there. false leaves the REST endpoint open to whoever reaches it, as "+
			"Flink's is.")

	// YarnShipLocalKeytab uploads the Kerberos keytab with the application.
	YarnShipLocalKeytab = Bool("yarn.security.kerberos.ship-local-keytab", true,
		"Whether the client uploads the keytab named by security.kerberos.login.keytab with the application, "+
			"so that containers can log in and renew their credentials.")

	// YarnLocalizedKeytabPath is where containers find the keytab.
	YarnLocalizedKeytabPath = String("yarn.security.kerberos.localized-keytab-path", "krb5.keytab",
		"Path of the keytab in the containers: relative to the container's working directory when the keytab "+
			"is shipped (yarn.security.kerberos.ship-local-keytab), else a path present on every node.")
)

func yarnOptions() []AnyOption {
	return []AnyOption{
		YarnApplicationName, YarnApplicationType, YarnApplicationQueue, YarnTags, YarnApplicationPriority,
		YarnApplicationAttempts, YarnApplicationAttemptFailuresValidityInterval, YarnApplicationNodeLabel,
		YarnTaskManagerNodeLabel, YarnApplicationID,
		YarnProvidedLibDirs, YarnStagingDirectory, YarnShipFiles, YarnAppMasterVcores, YarnContainersVcores,
		YarnHeartbeatInterval, YarnContainerRequestHeartbeatInterval, YarnRESTToken, YarnShipLocalKeytab, YarnLocalizedKeytabPath,
	}
}
