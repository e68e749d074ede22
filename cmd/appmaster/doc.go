// Package appmaster will be the YARN ApplicationMaster: it registers with
// the ResourceManager using its AMRMToken and hosts the Dispatcher, the
// ResourceManager, one JobMaster per job and the REST endpoint, turning slot
// requests into container requests. It is built by the YARN deployment
// issue; nothing here works yet.
package appmaster
