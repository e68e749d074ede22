package protobuf

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtoSource prints fd as .proto source, as the registry stores a
// Protobuf schema: syntax, package, imports, messages (nested), enums,
// fields with their labels, oneofs, maps and proto3 optional. Options,
// extensions, services and proto2 defaults are not printed (they do not
// change the wire format of the messages).
func ProtoSource(fd protoreflect.FileDescriptor) (string, error) {
	var b strings.Builder
	syntax := "proto3"
	switch fd.Syntax() {
	case protoreflect.Proto2:
		syntax = "proto2"
	case protoreflect.Proto3:
	default:
		return "", fmt.Errorf("protobuf: %s: syntax %v cannot be printed", fd.Path(), fd.Syntax())
	}
	fmt.Fprintf(&b, "syntax = %q;\n", syntax)
	if fd.Package() != "" {
		fmt.Fprintf(&b, "\npackage %s;\n", fd.Package())
	}
	if imps := fd.Imports(); imps.Len() > 0 {
		b.WriteString("\n")
		for i := range imps.Len() {
			fmt.Fprintf(&b, "import %q;\n", imps.Get(i).Path())
		}
	}
	p := printer{b: &b, pkg: string(fd.Package()), proto2: syntax == "proto2"}
	for i := range fd.Enums().Len() {
		b.WriteString("\n")
		p.enum(fd.Enums().Get(i), "")
	}
	for i := range fd.Messages().Len() {
		b.WriteString("\n")
		p.message(fd.Messages().Get(i), "")
	}
	return b.String(), nil
}

type printer struct {
	b      *strings.Builder
	pkg    string
	proto2 bool
}

func (p printer) message(md protoreflect.MessageDescriptor, indent string) {
	fmt.Fprintf(p.b, "%smessage %s {\n", indent, md.Name())
	in := indent + "  "
	fields := md.Fields()
	done := map[protoreflect.OneofDescriptor]bool{}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if done[od] {
				continue
			}
			done[od] = true
			fmt.Fprintf(p.b, "%soneof %s {\n", in, od.Name())
			for j := range od.Fields().Len() {
				f := od.Fields().Get(j)
				fmt.Fprintf(p.b, "%s  %s %s = %d;\n", in, p.typeName(f), f.Name(), f.Number())
			}
			fmt.Fprintf(p.b, "%s}\n", in)
			continue
		}
		label := ""
		switch {
		case fd.IsMap():
		case fd.Cardinality() == protoreflect.Repeated:
			label = "repeated "
		case fd.Cardinality() == protoreflect.Required:
			label = "required "
		case p.proto2 || fd.HasPresence() && fd.Message() == nil:
			label = "optional "
		}
		fmt.Fprintf(p.b, "%s%s%s %s = %d;\n", in, label, p.typeName(fd), fd.Name(), fd.Number())
	}
	for i := range md.Messages().Len() {
		nested := md.Messages().Get(i)
		if nested.IsMapEntry() {
			continue
		}
		p.b.WriteString("\n")
		p.message(nested, in)
	}
	for i := range md.Enums().Len() {
		p.b.WriteString("\n")
		p.enum(md.Enums().Get(i), in)
	}
	fmt.Fprintf(p.b, "%s}\n", indent)
}

func (p printer) enum(ed protoreflect.EnumDescriptor, indent string) {
	fmt.Fprintf(p.b, "%senum %s {\n", indent, ed.Name())
	for i := range ed.Values().Len() {
		v := ed.Values().Get(i)
		fmt.Fprintf(p.b, "%s  %s = %d;\n", indent, v.Name(), v.Number())
	}
	fmt.Fprintf(p.b, "%s}\n", indent)
}

func (p printer) typeName(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		return fmt.Sprintf("map<%s, %s>", p.typeName(fd.MapKey()), p.typeName(fd.MapValue()))
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return p.ref(fd.Message().FullName())
	case protoreflect.EnumKind:
		return p.ref(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

// ref names a message or enum: relative to the file's package when in it,
// fully qualified otherwise.
func (p printer) ref(full protoreflect.FullName) string {
	if p.pkg != "" && strings.HasPrefix(string(full), p.pkg+".") {
		return strings.TrimPrefix(string(full), p.pkg+".")
	}
	return "." + string(full)
}
