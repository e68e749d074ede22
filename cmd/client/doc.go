// Package client will be the `sluice` command line client, mirroring
// Flink's CLI: run (--target local|remote|yarn-session|yarn-application),
// info, list, savepoint, checkpoint, stop, cancel, and the commands that
// start a standalone JobManager and TaskManagers. It is built by the
// distributed-runtime issue; it is not a main package yet, so nothing here
// pretends to work.
package client
