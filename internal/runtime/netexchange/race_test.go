//go:build race

package netexchange

const raceEnabled = true
