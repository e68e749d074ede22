// Package bench holds Sluice's performance benchmarks. They report, per
// workload, records per second and allocations per record; `make bench`
// runs them. They measure; they never fail on a figure.
package bench
