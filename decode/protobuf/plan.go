package protobuf

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
)

// builder compiles the plan of a message type for a table.
type builder struct {
	s        *chunk.Schema
	o        Options
	rg       chunk.ServerRanges
	byPath   map[string][]int // field path -> columns reading it
	prefixes map[string]bool  // every proper prefix of a field path
	used     []bool           // column fed by a field
	errs     []error
	// elem > 0 while compiling the elements of a repeated message (or a
	// map's entries) that feeds a Nested structure.
	elem int
	// unfed are columns of Nested structures no field of the elements
	// feeds (validate_schema full lists them).
	unfed []unfed
}

type unfed struct {
	col   int
	array string
}

func newBuilder(s *chunk.Schema, o Options) *builder {
	return &builder{
		s:        s,
		o:        o,
		rg:       o.Ranges.OrDefault(),
		byPath:   make(map[string][]int),
		prefixes: make(map[string]bool),
		used:     make([]bool, len(s.Types)),
	}
}

// addPath notes that column i reads field path p.
func (b *builder) addPath(p string, i int) {
	if p == "" {
		return
	}
	b.byPath[p] = append(b.byPath[p], i)
	for j := 0; j < len(p); j++ {
		if p[j] == '.' {
			b.prefixes[p[:j]] = true
		}
	}
}

// record compiles the top-level rec of message md.
func (b *builder) record(md protoreflect.MessageDescriptor) *rec {
	r := &rec{}
	r.msg = b.message(r, md, "", -1)
	r.fastOK = fastOK(r)
	return r
}

func newSlot(r *rec) int32 {
	r.slots = append(r.slots, slot{head: -1, tail: -1})
	return int32(len(r.slots) - 1)
}

// message compiles the plan of md's fields, at path prefix ("" or
// "a.b."), into r; parent is the slot of md's own field in r (-1 when md
// is r's message).
func (b *builder) message(r *rec, md protoreflect.MessageDescriptor, prefix string, parent int32) *msgPlan {
	m := &msgPlan{path: prefix, name: string(md.FullName())}
	fds := md.Fields()
	read := func(fd protoreflect.FieldDescriptor) bool {
		p := prefix + string(fd.Name())
		return len(b.byPath[p]) > 0 || b.prefixes[p]
	}
	// A oneof some member of which is read has all its members in the
	// plan: any of them on the wire empties the others.
	live := map[protoreflect.OneofDescriptor]bool{}
	for i := 0; i < fds.Len(); i++ {
		if oo := fds.Get(i).ContainingOneof(); oo != nil && !oo.IsSynthetic() && read(fds.Get(i)) {
			live[oo] = true
		}
	}
	oneofs := map[protoreflect.OneofDescriptor][][3]int32{}
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		path := prefix + string(fd.Name())
		cols := b.byPath[path]
		under := b.prefixes[path]
		oo := fd.ContainingOneof()
		if oo != nil && oo.IsSynthetic() {
			oo = nil
		}
		f := fieldPlan{
			path:   path,
			num:    fd.Number(),
			kind:   kindName(fd),
			wt:     wireType(fd),
			packed: fd.IsList() && packable(fd.Kind()),
			slot:   -1,
		}
		if len(cols) == 0 && !under {
			if oo != nil && live[oo] {
				oneofs[oo] = append(oneofs[oo], [3]int32{int32(len(m.fields)), 0, 0})
				m.fields = append(m.fields, f)
			}
			continue // skipped unread
		}
		for _, ci := range cols {
			b.used[ci] = true
		}
		if fd.Kind() == protoreflect.GroupKind {
			for _, ci := range cols {
				b.fail(path, fd, ci, errors.New("groups are not supported"))
			}
			b.notMessage(path, fd)
			continue
		}
		f.slot = newSlot(r)
		f.utf8 = fd.Kind() == protoreflect.StringKind && enforceUTF8(fd)
		lo := f.slot
		for _, ci := range cols {
			t := b.target(ci)
			if t == nil {
				continue // not an Array, inside the elements of a Nested structure: nested reports it
			}
			em, list, err := b.fieldEmit(fd, t, path, ci, f.slot, parent)
			if err != nil {
				b.fail(path, fd, ci, err)
				continue
			}
			f.list = f.list || list
			r.emits = append(r.emits, em)
		}
		switch {
		case !under:
		case fd.IsMap() || fd.IsList() && fd.Message() != nil:
			f.list = true
			var dedup *mapKey
			if fd.IsMap() {
				dedup = keyOf(fd.MapKey())
			}
			r.emits = append(r.emits, b.nested(&f, fd, dedup))
		case fd.Message() != nil && !fd.IsList():
			f.sub = b.message(r, fd.Message(), path+".", f.slot)
		default:
			b.notMessage(path, fd)
		}
		if oo != nil {
			oneofs[oo] = append(oneofs[oo], [3]int32{int32(len(m.fields)), lo, int32(len(r.slots))})
		}
		m.fields = append(m.fields, f)
	}
	groups := make([][][3]int32, 0, len(oneofs))
	for _, g := range oneofs {
		groups = append(groups, g)
	}
	setClears(m, groups)
	m.index()
	return m
}

// nested compiles the emit of field f, a repeated message (or a map,
// whose entries dedup tells apart), whose elements' fields feed the Array
// columns path.x of a Nested structure.
func (b *builder) nested(f *fieldPlan, fd protoreflect.FieldDescriptor, dedup *mapKey) emit {
	path := f.path
	var group []int
	for ci, p := range b.fieldPaths() {
		if !strings.HasPrefix(p, path+".") {
			continue
		}
		b.used[ci] = true
		switch {
		case b.elem > 0:
			b.fail(p, fd, ci, fmt.Errorf("field %q is a repeated message inside the elements of a repeated message: its fields cannot feed columns", path))
		case b.s.Types[ci].Kind != chunk.KindArray:
			b.fail(p, fd, ci, fmt.Errorf("field %q is %s: the columns its elements' fields feed must be Arrays", path, kindName(fd)))
		default:
			group = append(group, ci)
		}
	}
	if b.elem > 0 || len(group) == 0 {
		return emit{path: path, slot: -1, parent: -1, nested: &nestedEmit{elem: &rec{msg: &msgPlan{}}}}
	}
	b.elem++
	er := &rec{}
	er.msg = b.message(er, fd.Message(), path+".", -1)
	er.fastOK = fastOK(er)
	b.elem--
	fed := map[int]bool{}
	for _, em := range er.emits {
		fed[em.col] = true
	}
	n := &nestedEmit{elem: er, cols: group, dedup: dedup}
	for _, ci := range group {
		if !fed[ci] {
			n.unfed = append(n.unfed, ci)
			b.unfed = append(b.unfed, unfed{col: ci, array: path})
		}
	}
	return emit{path: path, slot: f.slot, parent: -1, nested: n}
}

// notMessage reports the columns whose paths go into field path, which
// is not a message.
func (b *builder) notMessage(path string, fd protoreflect.FieldDescriptor) {
	for ci, p := range b.fieldPaths() {
		if strings.HasPrefix(p, path+".") {
			b.used[ci] = true
			b.fail(p, fd, ci, fmt.Errorf("field %q is %s, not a message", path, kindName(fd)))
		}
	}
}

// target is the type a field's values go into for column ci: the column's
// type or, inside the elements of a Nested structure, the column's
// element type (nil when the column is not an Array: nested reports it).
func (b *builder) target(ci int) *chunk.Type {
	t := b.s.Types[ci]
	if b.elem == 0 {
		return t.Base()
	}
	if t.Kind != chunk.KindArray {
		return nil
	}
	return t.Elem.Base()
}

// fieldPaths returns the field path of each column ("" for none).
func (b *builder) fieldPaths() []string {
	out := make([]string, len(b.s.Types))
	for p, cols := range b.byPath {
		for _, ci := range cols {
			out[ci] = p
		}
	}
	return out
}

func (b *builder) fail(path string, fd protoreflect.FieldDescriptor, col int, err error) {
	b.errs = append(b.errs, fmt.Errorf("field %q (%s) -> column %s (%s): %w",
		path, kindName(fd), b.s.Names[col], b.s.Types[col].Name, err))
}

// validate lists the mismatches between md's top-level fields and the
// table's columns that level does not allow.
func (b *builder) validate(level string, md protoreflect.MessageDescriptor, fields []string) []error {
	if level != ValidateNames && level != ValidateFull {
		return nil
	}
	var out []error
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		name := string(fds.Get(i).Name())
		if len(b.byPath[name]) == 0 && !b.prefixes[name] {
			out = append(out, fmt.Errorf("field %q has no column", name))
		}
	}
	if level == ValidateFull {
		for i, t := range b.s.Types {
			if b.used[i] || t.Kind == chunk.KindNullable || fields[i] == "" {
				continue
			}
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field", b.s.Names[i], t.Name))
		}
		for _, u := range b.unfed {
			out = append(out, fmt.Errorf("column %s (%s) is filled by no field of the elements of %q", b.s.Names[u.col], b.s.Types[u.col].Name, u.array))
		}
	}
	return out
}

// wireType is the wire type of one value of fd (an element, for a
// repeated field; an entry, for a map).
func wireType(fd protoreflect.FieldDescriptor) protowire.Type {
	switch fd.Kind() {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.BytesType
}

func packable(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

// enforceUTF8 reports whether a string field must hold valid UTF-8, as
// Protobuf's own parser checks it: proto3, and editions whose
// utf8_validation is VERIFY.
func enforceUTF8(fd protoreflect.FieldDescriptor) bool {
	if fd.Syntax() == protoreflect.Editions {
		if e, ok := fd.(interface{ EnforceUTF8() bool }); ok {
			return e.EnforceUTF8()
		}
	}
	return fd.Syntax() == protoreflect.Proto3
}

// kindName names a field's type for messages: int64, string, enum
// a.Color, message a.B, repeated int32, map<string, int64>.
func kindName(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		return "map<" + kindName(fd.MapKey()) + ", " + kindName(fd.MapValue()) + ">"
	}
	var n string
	switch fd.Kind() {
	case protoreflect.EnumKind:
		n = "enum " + string(fd.Enum().FullName())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		n = "message " + string(fd.Message().FullName())
	default:
		n = fd.Kind().String()
	}
	if fd.IsList() {
		return "repeated " + n
	}
	return n
}

// zeroOf is fd's default value (zero, or proto2's [default = ...]) as an
// occurrence on the wire, for a field that is absent.
func zeroOf(fd protoreflect.FieldDescriptor) val {
	v := val{wt: wireType(fd)}
	if fd.IsList() || fd.IsMap() || fd.Message() != nil {
		return v
	}
	def := fd.Default()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if def.Bool() {
			v.u = 1
		}
	case protoreflect.EnumKind:
		v.u = uint64(int64(def.Enum()))
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		v.u = uint64(def.Int())
	case protoreflect.Sfixed32Kind:
		v.u = uint64(uint32(int32(def.Int())))
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		v.u = protowire.EncodeZigZag(def.Int())
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		v.u = def.Uint()
	case protoreflect.FloatKind:
		v.u = uint64(math.Float32bits(float32(def.Float())))
	case protoreflect.DoubleKind:
		v.u = math.Float64bits(def.Float())
	case protoreflect.StringKind:
		v.b = []byte(def.String())
	case protoreflect.BytesKind:
		v.b = def.Bytes()
	}
	return v
}

// keyOf is how the entries of map field fd's keys (fd.MapKey()) compare.
func keyOf(kd protoreflect.FieldDescriptor) *mapKey {
	k := &mapKey{bits: 64}
	switch kd.Kind() {
	case protoreflect.StringKind:
		k.str = true
	case protoreflect.BoolKind:
		k.bool = true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		k.bits = 32
	}
	return k
}
