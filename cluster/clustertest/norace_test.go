//go:build !race

package clustertest

const raceEnabled = false
