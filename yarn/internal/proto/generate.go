// Package proto holds Sluice's own .proto definitions of the Hadoop IPC and
// YARN wire messages it speaks, and the Go code generated from them:
//
//   - commonpb: Hadoop IPC framing (proto package sluice.hadoop.common)
//   - yarnpb:   YARN records and protocol messages (proto package sluice.yarn)
//   - hdfspb:   the few ClientNamenodeProtocol messages Sluice sends (proto
//     package sluice.hadoop.hdfs)
//
// Field numbers and types follow Hadoop's public wire format; proto package
// names and file paths are Sluice's own, so the descriptors never clash with
// Hadoop's (hadoop.common, hadoop.yarn) registered by other libraries such as
// github.com/colinmarc/hdfs/v2 in the same binary.
//
// Regenerate with `go generate ./yarn/internal/proto/` (needs protoc and
// protoc-gen-go on PATH).
package proto

//go:generate protoc --proto_path=../../.. --go_out=../../.. --go_opt=paths=source_relative yarn/internal/proto/commonpb/rpc_header.proto yarn/internal/proto/commonpb/ipc_connection_context.proto yarn/internal/proto/commonpb/protobuf_rpc_engine.proto yarn/internal/proto/commonpb/security.proto yarn/internal/proto/yarnpb/yarn_protos.proto yarn/internal/proto/yarnpb/yarn_service_protos.proto yarn/internal/proto/hdfspb/namenode.proto
