// Package formatsbench holds the benchmarks of the formats (make
// bench-formats): decoding and encoding a 20-field record in each format,
// through the format and through the library's own call alone, with
// records/s and allocations per record.
package formatsbench
