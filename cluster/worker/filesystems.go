package worker

import (
	"fmt"
	"slices"

	"github.com/sluice/sluice/fs"
	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/hdfs"
)

// registerHDFS makes hdfs:// URIs (checkpoint and savepoint directories)
// resolve in a worker without the program registering HDFS itself, as
// Flink's TaskManagers read hdfs:// through the Hadoop filesystem they
// bundle. The Hadoop configuration is the one the environment names
// (HADOOP_CONF_DIR, YARN_CONF_DIR or HADOOP_HOME: a YARN container's
// working directory, where the client staged core-site.xml); without one,
// every hdfs:// URI must name its NameNode. A program that registered hdfs
// on its resolver (stream.WithFileSystems) keeps its own. Nothing is
// dialled until a URI is resolved.
func registerHDFS(r *fs.Resolver, getenv func(string) string) error {
	if slices.Contains(r.Schemes(), "hdfs") {
		return nil
	}
	h, err := hadoop.LoadFromEnvironment(getenv)
	if err != nil {
		return fmt.Errorf("worker: the Hadoop configuration for hdfs:// URIs: %w", err)
	}
	return hdfs.Register(r, hdfs.Config{Hadoop: h, Getenv: getenv})
}
