// Package clustertest runs a standalone Sluice cluster as real processes
// on loopback — a JobManager and TaskManagers started through the sluice
// CLI — and drives jobs on it the way a user does: sluice run, list,
// savepoint, stop, cancel. Its tests check that a job spanning
// TaskManagers gives the results of local mode (with keyed, rebalanced,
// broadcast and united exchanges between them), and that it recovers with
// exactly-once results from kill -9 of a TaskManager and of the
// JobManager.
package clustertest
