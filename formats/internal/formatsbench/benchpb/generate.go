// Package benchpb is the generated 20-field message of the formats' benchmarks.
package benchpb

//go:generate protoc --proto_path=../../../.. --go_out=../../../.. --go_opt=paths=source_relative formats/internal/formatsbench/benchpb/record.proto
