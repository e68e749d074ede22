// Package taskmanager will be the TaskManager process: it registers its
// slots with a ResourceManager, runs the subtasks deployed to it by
// executing the job binary as a worker, and exchanges records with other
// TaskManagers. It is built by the distributed-runtime issue; nothing here
// works yet.
package taskmanager
