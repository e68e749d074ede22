package conf

import (
	"fmt"
	"strings"
)

// The environment of a job binary: how the sluice CLI and the cluster tell
// a job program (stream.Execute) what to do. Everything else travels as
// configuration keys.
const (
	// EnvExecutionTarget selects what the job binary does: "local" (or
	// unset) runs the job on an embedded cluster, "plan" writes its job
	// graph to EnvPlanOut and exits, "remote" submits it to the JobManager
	// at EnvJobManager, "worker" runs tasks for a TaskManager.
	EnvExecutionTarget = "SLUICE_EXECUTION_TARGET"
	// EnvPlanOut names the file the job graph JSON is written to in plan mode.
	EnvPlanOut = "SLUICE_PLAN_OUT"
	// EnvJobManager is the REST address (host:port) of the JobManager in
	// remote mode.
	EnvJobManager = "SLUICE_JOBMANAGER"
	// EnvDynamicProperties holds key=value settings, one per line, applied
	// over the job's configuration (the CLI's -D and the settings its flags
	// stand for).
	EnvDynamicProperties = "SLUICE_DYNAMIC_PROPERTIES"
	// EnvWorkerDeployment names the deployment file of a worker, or is "-":
	// the deployment comes on standard input (as a TaskManager hands it).
	EnvWorkerDeployment = "SLUICE_WORKER_DEPLOYMENT"
	// EnvSubmittedOut names the file a job binary run by `sluice run`
	// writes a job's ID to once it has started (local) or submitted
	// (remote) it, so the CLI can tell a program that never submitted one.
	EnvSubmittedOut = "SLUICE_SUBMITTED_OUT"
	// EnvRESTToken is the REST token (security.rest.token-file) a program
	// in remote mode sends with its submission, when the sluice CLI or the
	// JobManager that runs it has one: in the environment, readable by the
	// program's user only, never on its command line.
	EnvRESTToken = "SLUICE_REST_TOKEN"
	// EnvProgramArgs holds the program's arguments as a JSON array when a
	// JobManager runs it (application mode): its command line, which every
	// local user can list, holds none; the program's start-up puts them
	// back in os.Args before its main runs.
	EnvProgramArgs = "SLUICE_PROGRAM_ARGS"
)

// Values of EnvExecutionTarget besides TargetLocal and TargetRemote.
const (
	BinaryModePlan   = "plan"
	BinaryModeWorker = "worker"
)

// JoinDynamicProperties writes key=value properties for EnvDynamicProperties,
// one per line. A property holding a line break cannot be passed this way
// and is an error.
func JoinDynamicProperties(props []string) (string, error) {
	for _, p := range props {
		if strings.ContainsAny(p, "\r\n") {
			return "", &ValueError{Type: "dynamic property", Value: p, Reason: "it contains a line break; a value must be on one line"}
		}
	}
	return strings.Join(props, "\n"), nil
}

// SplitDynamicProperties reads EnvDynamicProperties: one key=value per
// line, blank lines ignored. Pass the result to Sources.Dynamic or
// FromDynamicProperties, which report malformed lines.
func SplitDynamicProperties(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}

// DynamicProperty formats one key=value property.
func DynamicProperty(key, value string) string { return fmt.Sprintf("%s=%s", key, value) }
