// Package netpb holds the generated code of netexchange.proto, the data
// plane between Sluice workers (spoken only by internal/runtime/netexchange).
package netpb

//go:generate protoc --proto_path=../../../.. --go_out=../../../.. --go_opt=paths=source_relative --go-grpc_out=../../../.. --go-grpc_opt=paths=source_relative internal/runtime/netexchange/internal/netpb/netexchange.proto
