package yarndriver

import "context"

// ---------------------------------------------------------------------------
// TEMPORARY COPY of the ResourceManager driver interfaces of package
// cluster/resourcemanager (design in the distributed-runtime notes), which
// does not exist on this branch yet. When it does, replace this file by
//
//	type DriverEvents = resourcemanager.DriverEvents
//	var _ resourcemanager.Driver = (*Driver)(nil)
//
// and delete the unexported copy below.
// ---------------------------------------------------------------------------

// DriverEvents are the platform's reports to the ResourceManager.
type DriverEvents interface {
	// WorkerStopped reports a TaskManager's resource gone (container
	// completed, preempted, node lost) with the platform's diagnostics.
	WorkerStopped(resourceID, diagnostics string)
}

// rmDriver is resourcemanager.Driver.
type rmDriver interface {
	Run(ctx context.Context, events DriverEvents) error
	SetRequired(n int)
	Release(resourceID string)
}

var _ rmDriver = (*Driver)(nil)
