package yarndriver

import "github.com/sluice/sluice/cluster/resourcemanager"

// DriverEvents are the platform's reports to the ResourceManager.
type DriverEvents = resourcemanager.DriverEvents

var _ resourcemanager.Driver = (*Driver)(nil)
