package proto_test

import (
	"testing"

	// colinmarc/hdfs registers Hadoop's own descriptors (package hadoop.common,
	// files such as "RpcHeader.proto") at init. If ours clashed, this test
	// binary would panic before any test ran.
	_ "github.com/colinmarc/hdfs/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

func TestDescriptorsCoexistWithHadoopProtos(t *testing.T) {
	// Force both of our generated packages to be linked and initialised.
	ours := []protoreflect.FullName{
		(&commonpb.RpcRequestHeaderProto{}).ProtoReflect().Descriptor().FullName(),
		(&commonpb.TokenProto{}).ProtoReflect().Descriptor().FullName(),
		(&yarnpb.ApplicationReportProto{}).ProtoReflect().Descriptor().FullName(),
	}
	for _, name := range ours {
		if _, err := protoregistry.GlobalTypes.FindMessageByName(name); err != nil {
			t.Errorf("our message %s is not registered: %v", name, err)
		}
	}
	// Hadoop's own descriptors, registered by colinmarc/hdfs, must be there too
	// under their own names: proof that both sets live in one binary.
	for _, name := range []protoreflect.FullName{
		"hadoop.common.RpcRequestHeaderProto",
		"hadoop.common.TokenProto",
	} {
		if _, err := protoregistry.GlobalTypes.FindMessageByName(name); err != nil {
			t.Errorf("Hadoop message %s (from colinmarc/hdfs) is not registered: %v", name, err)
		}
	}
	for _, name := range ours {
		if name.Parent() == "hadoop.common" || name.Parent() == "hadoop.yarn" {
			t.Errorf("our message %s uses a Hadoop proto package", name)
		}
	}
	for _, path := range []string{
		"yarn/internal/proto/commonpb/rpc_header.proto",
		"yarn/internal/proto/yarnpb/yarn_service_protos.proto",
	} {
		if _, err := protoregistry.GlobalFiles.FindFileByPath(path); err != nil {
			t.Errorf("our file %s is not registered: %v", path, err)
		}
	}
}
