// Package scheduler will hold the pure decision functions of the control
// plane: matching slot requests to offered slots, and turning slot demand,
// held containers and YARN allocations into container requests, releases
// and launches. It imports no transport and performs no I/O; the
// ResourceManager and the YARN ApplicationMaster apply its decisions.
// Nothing here works yet (distributed-runtime and YARN issues).
package scheduler
