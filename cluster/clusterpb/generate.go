// Package clusterpb holds the generated code of cluster.proto, the control
// plane of a Sluice cluster.
package clusterpb

//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=paths=source_relative --go-grpc_out=../.. --go-grpc_opt=paths=source_relative cluster/clusterpb/cluster.proto
