// Package credpb is the generated Go code for the protobuf body of Hadoop
// token storage files (format version 1), from Sluice's own credentials.proto
// (proto package sluice.hadoop.security).
//
// Regenerate with `go generate ./hadoop/internal/credpb/`.
package credpb

//go:generate protoc --proto_path=../../.. --go_out=../../.. --go_opt=paths=source_relative hadoop/internal/credpb/credentials.proto
