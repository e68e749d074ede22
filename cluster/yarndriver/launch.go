package yarndriver

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn"
)

// Keys and variables the driver sets for every TaskManager.
const (
	// KeyResourceID is the dynamic property carrying the TaskManager's
	// resource id, its YARN container id (Flink's taskmanager.resource-id).
	KeyResourceID = "taskmanager.resource-id" // conf.TaskManagerResourceID
	// EnvLogDir is set to the container's log directory (YARN's <LOG_DIR>),
	// where the TaskManager writes its logs and its workers' output; YARN
	// keeps it after the container ends and serves it in its UIs.
	EnvLogDir = "SLUICE_LOG_DIR"
	// LogDirExpansion is replaced by the NodeManager with the container's
	// log directory, in commands and environment values.
	LogDirExpansion = "<LOG_DIR>"
)

// TaskManagerLaunch describes the TaskManager process started in every
// container.
type TaskManagerLaunch struct {
	// LocalResources are localized into the container's working directory,
	// keyed by link name (e.g. the TaskManager binary and config.yaml).
	// They must hold Program. Required.
	LocalResources map[string]yarn.LocalResource
	// Program is the link name of the executable among LocalResources.
	// Default "taskmanager".
	Program string
	// Args are passed before the dynamic properties. Optional.
	Args []string
	// DynamicProperties are passed as -Dkey=value arguments (e.g.
	// jobmanager.rpc.address and jobmanager.rpc.port); the driver adds
	// taskmanager.resource-id=<container id>.
	DynamicProperties map[string]string
	// Environment of the process. Values are expanded by the container's
	// shell ($PWD, ...). The driver adds SLUICE_LOG_DIR=<LOG_DIR>.
	Environment map[string]string
	// Credentials are the ApplicationMaster's (its token file); the
	// TaskManagers get them without the AMRMToken. Nil: none.
	Credentials *hadoop.Credentials
	// LogName names the files in the log directory that take the process's
	// stdout and stderr: <LogName>.out, <LogName>.err. Default "taskmanager".
	LogName string
}

func (t *TaskManagerLaunch) program() string {
	if t.Program == "" {
		return "taskmanager"
	}
	return t.Program
}

func (t *TaskManagerLaunch) validate() error {
	var errs []error
	if _, ok := t.LocalResources[t.program()]; !ok {
		errs = append(errs, fmt.Errorf("TaskManager.LocalResources has no %q (the program)", t.program()))
	}
	for name, r := range t.LocalResources {
		if name == "" || strings.Contains(name, "/") {
			errs = append(errs, fmt.Errorf("local resource name %q must be a plain file name", name))
		}
		if r.URL.Scheme == "" || r.URL.File == "" || r.Size < 0 || r.Timestamp <= 0 {
			errs = append(errs, fmt.Errorf("local resource %q needs a URL with scheme and path, its size and its timestamp", name))
		}
	}
	for k := range t.DynamicProperties {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			errs = append(errs, fmt.Errorf("dynamic property key %q", k))
		}
	}
	for k := range t.Environment {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			errs = append(errs, fmt.Errorf("environment variable name %q", k))
		}
	}
	if strings.ContainsAny(t.LogName, "/ ") {
		errs = append(errs, fmt.Errorf("LogName %q must be a plain file name", t.LogName))
	}
	return errors.Join(errs...)
}

// context is the launch context of the TaskManager in container id.
func (t *TaskManagerLaunch) context(resourceID string, tokens []byte) yarn.ContainerLaunchContext {
	env := maps.Clone(t.Environment)
	if env == nil {
		env = make(map[string]string)
	}
	env[EnvLogDir] = LogDirExpansion
	return yarn.ContainerLaunchContext{
		LocalResources: maps.Clone(t.LocalResources),
		Environment:    env,
		Commands:       []string{t.command(resourceID)},
		Tokens:         tokens,
	}
}

// command is the shell command line of the TaskManager in container
// resourceID.
func (t *TaskManagerLaunch) command(resourceID string) string {
	props := maps.Clone(t.DynamicProperties)
	if props == nil {
		props = make(map[string]string)
	}
	props[KeyResourceID] = resourceID
	args := append([]string{"./" + t.program()}, t.Args...)
	for _, k := range slices.Sorted(maps.Keys(props)) {
		args = append(args, "-D"+k+"="+props[k])
	}
	logName := t.LogName
	if logName == "" {
		logName = "taskmanager"
	}
	return ShellCommand(args, LogDirExpansion+"/"+logName+".out", LogDirExpansion+"/"+logName+".err")
}

// ShellCommand is a container command that runs args (passed to the program
// verbatim, whatever characters they hold) with stdout and stderr
// redirected to the given files (which may hold <LOG_DIR>).
//
// The NodeManager writes the command into its launch script inside double
// quotes, as the argument of bash -c: so every argument is single-quoted for
// the inner shell and then escaped for the double quotes of the outer one.
func ShellCommand(args []string, stdout, stderr string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(escapeDoubleQuoted(singleQuote(a)))
	}
	fmt.Fprintf(&b, " 1>%s 2>%s", escapeDoubleQuoted(singleQuote(stdout)), escapeDoubleQuoted(singleQuote(stderr)))
	return b.String()
}

// singleQuote quotes s for a POSIX shell, leaving words of only safe
// characters bare.
func singleQuote(s string) string {
	const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%"
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// escapeDoubleQuoted escapes the characters special inside a shell's
// double quotes.
func escapeDoubleQuoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '$', '`', '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
