//go:build race

package clustertest

// raceEnabled builds the cluster's binaries with the race detector when
// the tests run with it.
const raceEnabled = true
