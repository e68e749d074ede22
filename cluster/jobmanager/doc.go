// Package jobmanager is the control plane of a Sluice cluster: the
// Dispatcher, which accepts jobs and keeps them in the HA store, and one
// JobMaster per job, which acquires slots from the ResourceManager, deploys
// each attempt of the job to workers on TaskManagers, and coordinates its
// checkpoints and restarts. The JobMaster's decisions are internal/runtime/jobmaster's
// owner loop; this package gives it an Executor whose tasks run in workers
// (job binaries executed by TaskManagers) reached over gRPC.
package jobmanager
