package protoschema_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/etl-project/etl/protoschema"
)

// shop is a schema of two files: order.proto imports item.proto and two
// well-known types.
var shop = map[string]string{
	"shop/order.proto": `syntax = "proto3";
package shop.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "shop/item.proto";

message Order {
  string id = 1;
  google.protobuf.Timestamp placed_at = 2;
  repeated Item items = 3;
  google.protobuf.Int64Value discount = 4;
  message Note { string text = 1; }
  Note note = 5;
}
`,
	"shop/item.proto": `syntax = "proto3";
package shop.v1;

message Item {
  string sku = 1;
  int32 quantity = 2;
  map<string, string> labels = 3;
}
`,
}

// writeTree writes files under a new temporary folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkOrder checks that md is shop.v1.Order, its imports resolved.
func checkOrder(t *testing.T, md protoreflect.MessageDescriptor) {
	t.Helper()
	if md.FullName() != "shop.v1.Order" {
		t.Fatalf("message %s, want shop.v1.Order", md.FullName())
	}
	for name, want := range map[protoreflect.Name]protoreflect.FullName{
		"placed_at": "google.protobuf.Timestamp",
		"items":     "shop.v1.Item",
		"discount":  "google.protobuf.Int64Value",
		"note":      "shop.v1.Order.Note",
	} {
		f := md.Fields().ByName(name)
		if f == nil || f.Message() == nil || f.Message().FullName() != want {
			t.Fatalf("field %s: %v, want a %s", name, f, want)
		}
	}
	if f := md.Fields().ByName("items").Message().Fields().ByName("labels"); f == nil || !f.IsMap() {
		t.Fatalf("Item.labels is not a map: %v", f)
	}
}

func TestCompileFiles(t *testing.T) {
	dir := writeTree(t, shop)
	// Named relative to the import path, and by a path under it.
	for _, name := range []string{"shop/order.proto", filepath.Join(dir, "shop", "order.proto")} {
		files, err := protoschema.CompileFiles(context.Background(), []string{dir}, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		md, err := files.Message("shop.v1.Order")
		if err != nil {
			t.Fatal(err)
		}
		checkOrder(t, md)
		if md, err := files.Message(".shop.v1.Item"); err != nil || md.FullName() != "shop.v1.Item" {
			t.Fatalf("Message(.shop.v1.Item) = %v, %v", md, err)
		}
		if got, want := strings.Join(files.Messages(), " "), "shop.v1.Item shop.v1.Order shop.v1.Order.Note"; got != want {
			t.Fatalf("Messages() = %s, want %s", got, want)
		}
		if files.Root().Path() != "shop/order.proto" {
			t.Fatalf("Root() = %s", files.Root().Path())
		}
	}
}

func TestCompileErrorsNamePosition(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{{
		name: "syntax",
		// Line 4, column 17: the ";" where the field's number should be.
		text: "syntax = \"proto3\";\npackage p;\nmessage M {\n  string name = ;\n}\n",
		want: []string{"bad.proto:4:17:", "syntax error"},
	}, {
		name: "missing import",
		text: "syntax = \"proto3\";\nimport \"nowhere/else.proto\";\nmessage M {}\n",
		want: []string{"bad.proto:2:8:", "nowhere/else.proto"},
	}, {
		name: "unknown type",
		text: "syntax = \"proto3\";\nmessage M {\n  Missing m = 1;\n}\n",
		want: []string{"bad.proto:3:3:", "Missing"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"bad.proto": c.text})
			_, err := protoschema.CompileFiles(context.Background(), []string{dir}, "bad.proto")
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestUnknownMessage(t *testing.T) {
	files, err := protoschema.CompileSources(context.Background(), "", shop, "shop/order.proto")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, hint string }{
		{"shop.v1.Ordre", `did you mean "shop.v1.Order"?`},
		{"Order", `did you mean "shop.v1.Order"? a message is named in full`},
		{"Zebra", ""},
	} {
		_, err := files.Message(c.name)
		if !errors.Is(err, protoschema.ErrUnknownMessage) {
			t.Fatalf("Message(%q) error = %v, want ErrUnknownMessage", c.name, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "shop/order.proto") || !strings.Contains(msg, "its messages: shop.v1.Item, shop.v1.Order, shop.v1.Order.Note") {
			t.Errorf("Message(%q): %s: want the file and its messages", c.name, msg)
		}
		if c.hint != "" && !strings.Contains(msg, c.hint) {
			t.Errorf("Message(%q): %s: want %q", c.name, msg, c.hint)
		}
		if c.hint == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("Message(%q): %s: a did-you-mean for a name nothing is close to", c.name, msg)
		}
	}
}

// descriptorSet returns the FileDescriptorSet of files as protoc
// --include_imports writes it (every file after its imports), without
// the files whose path has the prefix skip ("" skips none).
func descriptorSet(t *testing.T, files *protoschema.Files, skip string) []byte {
	t.Helper()
	var set descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		if skip == "" || !strings.HasPrefix(fd.Path(), skip) {
			set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
		}
	}
	add(files.Root())
	b, err := proto.Marshal(&set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDescriptorSet(t *testing.T) {
	compiled, err := protoschema.CompileSources(context.Background(), "", shop, "shop/order.proto")
	if err != nil {
		t.Fatal(err)
	}
	// With the imports, the well-known types' files included; and without
	// those, which resolve anyway.
	for _, skip := range []string{"", "google/protobuf/"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "shop.pb")
		if err := os.WriteFile(path, descriptorSet(t, compiled, skip), 0o644); err != nil {
			t.Fatal(err)
		}
		files, err := protoschema.ReadDescriptorSet(path)
		if err != nil {
			t.Fatalf("skip %q: %v", skip, err)
		}
		md, err := files.Message("shop.v1.Order")
		if err != nil {
			t.Fatalf("skip %q: %v", skip, err)
		}
		checkOrder(t, md)
		if _, err := files.Message("shop.v1.Oder"); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `did you mean "shop.v1.Order"?`) {
			t.Fatalf("skip %q: unknown message error %v", skip, err)
		}
	}

	// A set without an import that is not a standard file.
	_, err = protoschema.ParseDescriptorSet("partial.pb", descriptorSet(t, compiled, "shop/item"))
	if err == nil || !strings.Contains(err.Error(), `"shop/order.proto" imports "shop/item.proto", which the set does not hold`) {
		t.Fatalf("set without shop/item.proto: %v", err)
	}
	// Not a descriptor set at all.
	if _, err := protoschema.ParseDescriptorSet("garbage.pb", []byte("syntax = \"proto3\";")); err == nil || !strings.Contains(err.Error(), "garbage.pb is not a FileDescriptorSet") {
		t.Fatalf("garbage: %v", err)
	}
	if _, err := protoschema.ParseDescriptorSet("empty.pb", nil); err == nil || !strings.Contains(err.Error(), "holds no file") {
		t.Fatalf("empty: %v", err)
	}
	if _, err := protoschema.ReadDescriptorSet(filepath.Join(t.TempDir(), "missing.pb")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
