package protoschema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/etl-project/etl/internal/names"
)

// ErrUnknownMessage means a message name, or a record's message indexes,
// name no message of the schema.
var ErrUnknownMessage = errors.New("protoschema: no such message")

// listedMessages is how many message names an error lists.
const listedMessages = 20

// standardPrefix is the import path of the well-known types and the other
// files protoc ships; a descriptor set may leave them out.
const standardPrefix = "google/protobuf/"

// Files is a set of compiled Protobuf files: the ones asked for (the
// roots) and everything they import. It is immutable and safe for
// concurrent use.
type Files struct {
	label    string // what the files are, for errors: "events.proto", "schema id 7"
	roots    []protoreflect.FileDescriptor
	messages map[protoreflect.FullName]protoreflect.MessageDescriptor
	names    []string // the full names of the messages outside google/protobuf/, sorted
}

// newFiles indexes the messages of roots and of every file they import.
func newFiles(label string, roots []protoreflect.FileDescriptor) *Files {
	f := &Files{label: label, roots: roots, messages: map[protoreflect.FullName]protoreflect.MessageDescriptor{}}
	seen := map[string]bool{}
	var addMessages func(ms protoreflect.MessageDescriptors, standard bool)
	addMessages = func(ms protoreflect.MessageDescriptors, standard bool) {
		for i := range ms.Len() {
			md := ms.Get(i)
			if md.IsMapEntry() {
				continue
			}
			f.messages[md.FullName()] = md
			if !standard {
				f.names = append(f.names, string(md.FullName()))
			}
			addMessages(md.Messages(), standard)
		}
	}
	var addFile func(fd protoreflect.FileDescriptor)
	addFile = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		addMessages(fd.Messages(), strings.HasPrefix(fd.Path(), standardPrefix))
		for i := range fd.Imports().Len() {
			addFile(fd.Imports().Get(i).FileDescriptor)
		}
	}
	for _, fd := range roots {
		addFile(fd)
	}
	slices.Sort(f.names)
	f.names = slices.Compact(f.names)
	return f
}

// Root returns the first of the files asked for: for a registry schema,
// the schema's own file, which its records' message indexes point into.
func (f *Files) Root() protoreflect.FileDescriptor { return f.roots[0] }

// Messages returns the full names of the messages the files define, their
// imports included and the well-known types left out, sorted.
func (f *Files) Messages() []string { return slices.Clone(f.names) }

// String names the files, as errors do.
func (f *Files) String() string { return f.label }

// Message returns the message named name (a full name, such as
// "shop.v1.Order"; a leading dot is allowed) from the files or their
// imports. A name it does not hold gives an error wrapping
// ErrUnknownMessage that lists the files' messages, with the closest as a
// did-you-mean.
func (f *Files) Message(name string) (protoreflect.MessageDescriptor, error) {
	name = strings.TrimPrefix(name, ".")
	if md := f.messages[protoreflect.FullName(name)]; md != nil {
		return md, nil
	}
	return nil, fmt.Errorf("%w: %q is not a message of %s%s; its messages: %s",
		ErrUnknownMessage, name, f.label, f.didYouMean(name), listNames(f.names))
}

// didYouMean is the hint for a message name the files do not hold: the
// closest name by edit distance, else the one full name that ends with
// name (a name given without its package).
func (f *Files) didYouMean(name string) string {
	if s := names.DidYouMean(name, f.names); s != "" {
		return s
	}
	var match string
	for _, n := range f.names {
		if strings.HasSuffix(n, "."+name) {
			if match != "" {
				return " (a message is named in full, with its package)"
			}
			match = n
		}
	}
	if match != "" {
		return fmt.Sprintf(" (did you mean %q? a message is named in full, with its package)", match)
	}
	return ""
}

// listNames lists ns for an error, the first listedMessages of them.
func listNames(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	if len(ns) <= listedMessages {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ns[:listedMessages], ", "), len(ns)-listedMessages)
}

// MessageAt returns the message a record's message indexes name in Root
// (see ParseFrame).
func (f *Files) MessageAt(indexes []int) (protoreflect.MessageDescriptor, error) {
	md, err := MessageAt(f.Root(), indexes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.label, err)
	}
	return md, nil
}

// CompileFiles compiles the .proto files and everything they import. Each
// file and import is looked for under importPaths, in order (the working
// directory when there is none); a file named by a path under one of the
// import paths is taken relative to it, as protoc does. The well-known
// types' google/protobuf/*.proto resolve without being shipped. A syntax
// or link error names its file, line and column.
func CompileFiles(ctx context.Context, importPaths []string, files ...string) (*Files, error) {
	if len(files) == 0 {
		return nil, errors.New("protoschema: no .proto file to compile")
	}
	rel := make([]string, len(files))
	for i, name := range files {
		rel[i] = relativeTo(importPaths, name)
	}
	r := &protocompile.SourceResolver{ImportPaths: importPaths}
	return compile(ctx, strings.Join(rel, ", "), r, rel)
}

// relativeTo returns name relative to the first import path it is under,
// or name as given.
func relativeTo(importPaths []string, name string) string {
	for _, p := range importPaths {
		r, err := filepath.Rel(p, name)
		if err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r) {
			if _, err := os.Stat(filepath.Join(p, r)); err == nil {
				return filepath.ToSlash(r)
			}
		}
	}
	return name
}

// CompileSources compiles files from sources, which maps each file's
// import path to its text; the imports of google/protobuf/*.proto need no
// source. label names the result in errors ("" for the files' names).
func CompileSources(ctx context.Context, label string, sources map[string]string, files ...string) (*Files, error) {
	if len(files) == 0 {
		return nil, errors.New("protoschema: no .proto file to compile")
	}
	if label == "" {
		label = strings.Join(files, ", ")
	}
	r := &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(sources)}
	return compile(ctx, label, r, files)
}

func compile(ctx context.Context, label string, r protocompile.Resolver, files []string) (*Files, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(r),
		// Records are decoded from descriptors alone: no source info,
		// which would only hold comments and positions in memory.
		SourceInfoMode: protocompile.SourceInfoNone,
		MaxParallelism: 1,
	}
	res, err := c.Compile(ctx, files...)
	if err != nil {
		// protocompile's errors start with file:line:col.
		return nil, fmt.Errorf("protoschema: compiling %s: %w", label, err)
	}
	roots := make([]protoreflect.FileDescriptor, len(res))
	for i, fd := range res {
		roots[i] = fd
	}
	return newFiles(label, roots), nil
}

// ReadDescriptorSet reads a compiled descriptor set (a FileDescriptorSet,
// as protoc --descriptor_set_out --include_imports writes it) from path.
func ReadDescriptorSet(path string) (*Files, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("protoschema: descriptor set: %w", err)
	}
	return ParseDescriptorSet(path, b)
}

// ParseDescriptorSet builds the files of a serialized FileDescriptorSet;
// label names it in errors. Every file a file of the set imports must be
// in the set, except google/protobuf/*.proto, which resolve without it.
// Its roots are the set's files, in the set's order.
func ParseDescriptorSet(label string, b []byte) (*Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("protoschema: %s is not a FileDescriptorSet (write it with protoc --descriptor_set_out --include_imports): %w", label, err)
	}
	if len(set.GetFile()) == 0 {
		return nil, fmt.Errorf("protoschema: descriptor set %s holds no file", label)
	}
	byName := map[string]*descriptorpb.FileDescriptorProto{}
	for _, fdp := range set.GetFile() {
		if _, dup := byName[fdp.GetName()]; dup {
			return nil, fmt.Errorf("protoschema: descriptor set %s holds %q twice", label, fdp.GetName())
		}
		byName[fdp.GetName()] = fdp
	}
	reg := new(protoregistry.Files)
	const building, built = 1, 2
	state := map[string]int{}
	var build func(name, importedBy string) error
	build = func(name, importedBy string) error {
		switch state[name] {
		case built:
			return nil
		case building:
			return fmt.Errorf("protoschema: descriptor set %s: %q imports itself through %q", label, name, importedBy)
		}
		fdp, ok := byName[name]
		if !ok {
			if strings.HasPrefix(name, standardPrefix) {
				if fd, err := protoregistry.GlobalFiles.FindFileByPath(name); err == nil {
					state[name] = built
					return reg.RegisterFile(fd)
				}
			}
			return fmt.Errorf("protoschema: descriptor set %s: %q imports %q, which the set does not hold (write it with protoc --include_imports)", label, importedBy, name)
		}
		state[name] = building
		for _, dep := range fdp.GetDependency() {
			if err := build(dep, name); err != nil {
				return err
			}
		}
		fd, err := protodesc.NewFile(fdp, reg)
		if err != nil {
			return fmt.Errorf("protoschema: descriptor set %s: %s: %w", label, name, err)
		}
		if err := reg.RegisterFile(fd); err != nil {
			return fmt.Errorf("protoschema: descriptor set %s: %s: %w", label, name, err)
		}
		state[name] = built
		return nil
	}
	roots := make([]protoreflect.FileDescriptor, 0, len(set.GetFile()))
	for _, fdp := range set.GetFile() {
		if err := build(fdp.GetName(), label); err != nil {
			return nil, err
		}
		fd, err := reg.FindFileByPath(fdp.GetName())
		if err != nil {
			return nil, fmt.Errorf("protoschema: descriptor set %s: %s: %w", label, fdp.GetName(), err)
		}
		roots = append(roots, fd)
	}
	return newFiles(label, roots), nil
}
