// Package yarntest runs Sluice on a real MiniYARNCluster and
// MiniDFSCluster (integration/minicluster) end to end, through the sluice
// CLI: the ApplicationMaster (cmd/appmaster) hosting the JobManager,
// TaskManager containers (cmd/taskmanager) running workers of the job
// binary (cluster/testdata/clusterjob), checkpoints on HDFS.
//
//	go test -tags integration -v ./cluster/yarntest/
package yarntest
