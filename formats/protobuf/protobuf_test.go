package protobuf_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice/sluice/formats"
	"github.com/sluice/sluice/formats/protobuf"
	"github.com/sluice/sluice/formats/protobuf/internal/testpb"
	"github.com/sluice/sluice/formats/registry"
)

func newRegistry(t *testing.T) *registry.Client {
	t.Helper()
	fake := srfake.New()
	t.Cleanup(fake.Close)
	c, err := registry.New(registry.Config{URLs: []string{fake.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The printed source is the .proto the message was generated from (less
// its go_package option).
func TestProtoSourceIsTheProtoFile(t *testing.T) {
	b, err := os.ReadFile("internal/testpb/user.proto")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(b), "option go_package = \"github.com/sluice/sluice/formats/protobuf/internal/testpb\";\n\n", "", 1)
	got, err := protobuf.ProtoSource(testpb.File_formats_protobuf_internal_testpb_user_proto)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("ProtoSource:\n%s\nwant:\n%s", got, want)
	}
}

func user() *testpb.User {
	r := 4.5
	return &testpb.User{Id: "u1", Age: 42, Tags: []string{"a", "b"}, Address: &testpb.User_Address{City: "Oslo"},
		Kind: testpb.User_KIND_PERSON, Contact: &testpb.User_Email{Email: "u@x"}, Scores: map[string]int32{"q": 3}, Rating: &r}
}

func TestGeneratedRoundTrip(t *testing.T) {
	reg := newRegistry(t)
	f, err := protobuf.New[*testpb.User](reg, protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Serialize("users", user())
	if err != nil {
		t.Fatal(err)
	}
	id, rest, err := registry.SplitHeader("protobuf", b)
	if err != nil || id < 1 || rest[0] != 0 { // User is message [0]: one 0 byte
		t.Fatalf("record %x: id %d, %v", b, id, err)
	}
	if want, _ := proto.Marshal(user()); string(rest[1:]) != string(want) {
		t.Fatalf("payload %x, want %x", rest[1:], want)
	}
	got, err := f.Deserialize("users", b)
	if err != nil || !proto.Equal(got, user()) {
		t.Fatalf("Deserialize = %v, %v", got, err)
	}

	// The second message of the file has index [1].
	ev, _ := protobuf.New[*testpb.Event](reg, protobuf.Options{})
	eb, err := ev.Serialize("events", &testpb.Event{Name: "e", User: user()})
	if err != nil {
		t.Fatal(err)
	}
	if _, rest, _ := registry.SplitHeader("protobuf", eb); rest[0] != 2 || rest[1] != 2 { // varint zigzag: one index, 1
		t.Fatalf("Event's indexes %x, want 02 02", rest[:2])
	}
	if idx := protobuf.MessageIndex((&testpb.User_Address{}).ProtoReflect().Descriptor()); len(idx) != 2 || idx[0] != 0 || idx[1] != 1 {
		t.Fatalf("User.Address index %v, want [0 1] (the map entry ScoresEntry, declared by field 8, is [0 0])", idx)
	}

	if _, err := f.Deserialize("users", append(registry.AppendHeader(nil, 999), 0, 1)); !errors.Is(err, formats.ErrUnknownSchema) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := f.Deserialize("users", append(registry.AppendHeader(nil, id), 0, 0xff)); !errors.Is(err, formats.ErrMalformed) {
		t.Fatalf("bad payload: %v", err)
	}
}

// An older reader (a dynamic message of a descriptor without the newer
// fields) reads a newer writer's records, keeps the fields it does not know
// and writes them out again.
func TestDynamicReaderKeepsUnknownFields(t *testing.T) {
	reg := newRegistry(t)
	fdp := protodesc.ToFileDescriptorProto(testpb.File_formats_protobuf_internal_testpb_user_proto)
	old := proto.Clone(fdp).(*descriptorpb.FileDescriptorProto)
	old.Name = proto.String("old/user.proto")
	old.Package = proto.String("sluice.formats.old")
	u := old.MessageType[0]
	var kept []*descriptorpb.FieldDescriptorProto
	for _, fld := range u.Field {
		if fld.GetNumber() <= 2 { // id and age only
			kept = append(kept, fld)
		}
	}
	u.Field, u.OneofDecl, u.NestedType, u.EnumType = kept, nil, nil, nil
	old.MessageType = old.MessageType[:1]
	ofd, err := protodesc.NewFile(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := protobuf.New[*testpb.User](reg, protobuf.Options{})
	r, err := protobuf.NewDynamic(reg, ofd.Messages().Get(0), protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := w.Serialize("users", user())
	m, err := r.Deserialize("users", b)
	if err != nil {
		t.Fatal(err)
	}
	if id := m.Get(m.Descriptor().Fields().ByName("id")).String(); id != "u1" {
		t.Fatalf("dynamic id %q", id)
	}
	if len(m.GetUnknown()) == 0 {
		t.Fatal("the newer fields were not kept as unknown fields")
	}
	out, err := r.Serialize("users-old", m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := w.Deserialize("users-old", out)
	if err != nil || !proto.Equal(back, user()) {
		t.Fatalf("written again and read by the newer reader: %v, %v", back, err)
	}
	var _ *dynamicpb.Message = m
}
