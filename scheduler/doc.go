// Package scheduler holds the pure decisions of the control plane: which
// free slots go to which job (MatchSlots), how many TaskManagers the demand
// needs and which idle ones it does not (PlanCapacity), and which peers have
// gone silent (Heartbeats). It imports no transport, performs no I/O and
// never reads the wall clock: callers pass the current state and the time,
// and apply the decisions themselves (the ResourceManager in
// cluster/resourcemanager, the YARN ApplicationMaster's driver).
package scheduler
