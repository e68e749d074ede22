//go:build integration

package registryserver_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/formats/internal/formatsbench/benchpb"
	"github.com/sluice/sluice/formats/internal/registryserver"
	"github.com/sluice/sluice/formats/jsonschema"
	"github.com/sluice/sluice/formats/protobuf"
	"github.com/sluice/sluice/formats/registry"
)

// The real registry accepts what the Protobuf and JSON Schema formats
// register (the .proto printed from a descriptor, a JSON Schema) and gives
// ids the readers resolve.
func TestProtobufAndJSONSchemaOnARealRegistry(t *testing.T) {
	url := registryserver.Start(t)
	reg, err := registry.New(registry.Config{URLs: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("protobuf", func(t *testing.T) {
		f, err := protobuf.New[*benchpb.Record20](reg, protobuf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := &benchpb.Record20{S1: "a", L1: 7, D1: 1.5, B1: true, I3: -2}
		b, err := f.Serialize("pb", in)
		if err != nil {
			t.Fatalf("registering the printed .proto: %v", err)
		}
		out, err := f.Deserialize("pb", b)
		if err != nil || !proto.Equal(in, out) {
			t.Fatalf("read back %v, %v", out, err)
		}
		id, _, _ := registry.SplitHeader("protobuf", b)
		ss, err := reg.SR().SchemaByID(t.Context(), id)
		if err != nil || ss.Type != registry.Protobuf {
			t.Fatalf("the registry's schema %d: %+v, %v", id, ss, err)
		}
	})
	t.Run("json-schema", func(t *testing.T) {
		type order struct {
			ID string `json:"id"`
		}
		f, err := jsonschema.New[order](reg, `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`, jsonschema.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.Serialize("js", order{"o1"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := f.Deserialize("js", b); err != nil || got.ID != "o1" {
			t.Fatalf("read back %+v, %v", got, err)
		}
	})
}
