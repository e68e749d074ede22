package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/conf"
)

// configFlags are the flags of every command that reads the configuration.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "configDir", EnvVars: []string{conf.EnvConfDir}, Usage: "directory holding config.yaml",
			TakesFile: true},
		&cli.StringSliceFlag{Name: "D", Usage: "set a configuration key, overriding config.yaml (`key=value`, repeatable; also -Dkey=value)"},
	}
}

// clusterFlags are the flags of commands that talk to a running cluster.
func clusterFlags() []cli.Flag {
	return append(configFlags(),
		&cli.StringFlag{Name: "jobmanager", Aliases: []string{"m"}, Usage: "`host:port` of the JobManager's REST endpoint (default: rest.address and rest.port)"},
		&cli.StringFlag{Name: "target", Aliases: []string{"t"}, Usage: "the kind of cluster: remote or yarn-session (default: remote)"},
	)
}

// loadConfig reads config.yaml from --configDir ($SLUICE_CONF_DIR) with
// the -D settings and extra settings (from other flags) over it, prints
// the warnings and reports every problem at once.
func loadConfig(c *cli.Context, extra ...string) (*conf.Configuration, error) {
	dir := c.String("configDir")
	props := append(c.StringSlice("D"), extra...)
	cfg, warnings, err := conf.Load(conf.Sources{ConfDir: dir, Dynamic: props})
	for _, w := range warnings {
		fmt.Fprintf(c.App.ErrWriter, "sluice: warning: %s\n", w)
	}
	switch {
	case err == nil:
		return cfg, nil
	case errors.Is(err, conf.ErrInvalid):
		return nil, usagef(c, "%v\nFix the values in %s or the -D options.", err, configFile(dir))
	case errors.Is(err, fs.ErrNotExist):
		return nil, usagef(c, "%v\n--configDir (or $%s) must name the directory holding %s.", err, conf.EnvConfDir, conf.FileName)
	default:
		return nil, err
	}
}

func configFile(dir string) string {
	if dir == "" {
		return "config.yaml (none read: set --configDir)"
	}
	return filepath.Join(dir, conf.FileName)
}

// restAddress is where the cluster's REST endpoint is reached: --jobmanager,
// or rest.address (else jobmanager.rpc.address, else localhost) and
// rest.port.
func restAddress(c *cli.Context, cfg *conf.Configuration) (string, error) {
	if jm := c.String("jobmanager"); jm != "" {
		host, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(jm, "http://"), "https://"))
		if err != nil || host == "" {
			return "", usagef(c, "--jobmanager %q is not host:port; give the JobManager's REST address, e.g. --jobmanager localhost:8081", jm)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return "", usagef(c, "--jobmanager %q: port %q is not a port number (1-65535)", jm, port)
		}
		return jm, nil
	}
	host := conf.Get(cfg, conf.RESTAddress)
	if host == "" {
		host = conf.Get(cfg, conf.JobManagerRPCAddress)
	}
	if host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(conf.Get(cfg, conf.RESTPort))), nil
}

// absDir returns the absolute form of a --configDir for a child process.
func absDir(dir string) string {
	if dir == "" {
		return ""
	}
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// childEnv is the environment of a job binary: ours without the variables
// of the job binary contract, plus set.
func childEnv(set map[string]string) []string {
	contract := map[string]bool{conf.EnvExecutionTarget: true, conf.EnvPlanOut: true, conf.EnvJobManager: true,
		conf.EnvDynamicProperties: true, conf.EnvWorkerDeployment: true, conf.EnvSubmittedOut: true, conf.EnvRESTToken: true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if contract[k] {
			continue
		}
		if _, overridden := set[k]; overridden {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}
