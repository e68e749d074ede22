//go:build race

package core_test

// raceEnabled: the race detector drops pooled objects at random, so
// allocation counts are only checked without it.
const raceEnabled = true
