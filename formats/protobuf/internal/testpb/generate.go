// Package testpb is a generated message for the protobuf format's tests.
package testpb

//go:generate protoc --proto_path=../../../.. --go_out=../../../.. --go_opt=paths=source_relative formats/protobuf/internal/testpb/user.proto
