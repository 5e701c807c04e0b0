package protobuf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

func cannot(fd protoreflect.FieldDescriptor, t *chunk.Type) error {
	return fmt.Errorf("%s cannot go into %s", kindName(fd), t.Name)
}

// fieldEmit compiles the emit of field fd (its slot in r, flattened from
// the message of slot parent) into column (or element) col of type t.
// list reports that the emit reads every occurrence.
func (b *builder) fieldEmit(fd protoreflect.FieldDescriptor, t *chunk.Type, path string, col int, slot, parent int32) (em emit, list bool, err error) {
	t = t.Base()
	em = emit{path: path, col: col, slot: slot, parent: parent, nullable: t.Kind == chunk.KindNullable}
	switch {
	case fd.Kind() == protoreflect.GroupKind:
		return em, false, errors.New("groups are not supported")
	case fd.IsMap():
		em.list, err = b.compileMap(fd, t)
		return em, true, err
	case fd.IsList():
		em.list, em.elem, err = b.compileList(fd, t)
		em.ewt = wireType(fd)
		if err == nil {
			em.fop, em.dt = b.fastOf(fd, t.Elem)
		}
		return em, true, err
	case fd.Message() != nil:
		var ms *msgSetter
		if ms, err = b.compileMessage(fd.Message(), t); err != nil {
			return em, true, err
		}
		em.list, em.one, em.presence = ms.merge, ms.one, true
		em.fop, em.dt = b.fastOf(fd, t)
		return em, true, nil
	}
	em.set, err = compileScalar(fd, t, b.rg)
	if err == nil {
		em.fop, em.dt = b.fastOf(fd, t)
	}
	em.presence, em.zero = fd.HasPresence(), zeroOf(fd)
	if k := fd.Kind(); k == protoreflect.StringKind || k == protoreflect.BytesKind {
		base := t
		if base.Kind == chunk.KindNullable {
			base = base.Elem.Base()
		}
		// The empty string is no value of the other types (UUID, IPv4,
		// IPv6, Enum, Decimal): an absent field gives the column's
		// default.
		em.zeroDefault = base.Kind != chunk.KindString && base.Kind != chunk.KindFixedString

	}
	return em, false, err
}

// nullable wraps the setter of a Nullable column's inner type.
func nullable(inner setter) setter {
	return func(d *Decoder, v val, col chunk.Column) *decode.Error {
		n := col.(*chunk.Nullable)
		if e := inner(d, v, n.Inner); e != nil {
			return e
		}
		n.MarkValue()
		return nil
	}
}

func nullableList(inner listSetter) listSetter {
	return func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error {
		n := col.(*chunk.Nullable)
		if e := inner(d, r, head, n.Inner); e != nil {
			return e
		}
		n.MarkValue()
		return nil
	}
}

// compileList compiles repeated field fd into Array column type t.
// It also returns the setter of one element, into the Array's inner
// column.
func (b *builder) compileList(fd protoreflect.FieldDescriptor, t *chunk.Type) (listSetter, setter, error) {
	if t.Kind != chunk.KindArray {
		return nil, nil, fmt.Errorf("%s cannot go into %s: want an Array", kindName(fd), t.Name)
	}
	et := t.Elem.Base()
	var elem setter
	if fd.Message() != nil {
		ms, err := b.compileMessage(fd.Message(), et)
		if err != nil {
			return nil, nil, err
		}
		elem = ms.one
	} else {
		var err error
		if elem, err = compileScalar(fd, et, b.rg); err != nil {
			return nil, nil, err
		}
	}
	ewt := wireType(fd)
	return func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error {
		a := col.(*chunk.Array)
		for o := head; o >= 0; o = r.occ[o].next {
			v := &r.occ[o].v
			if v.wt == protowire.BytesType && ewt != protowire.BytesType {
				if e := d.packed(v, ewt, elem, a.Inner); e != nil {
					return e
				}
				continue
			}
			if e := elem(d, *v, a.Inner); e != nil {
				return e
			}
		}
		a.EndRow()
		return nil
	}, elem, nil
}

// compileMap compiles map field fd into Map column type t: its entries
// in order, a later entry replacing an earlier one of the same key.
func (b *builder) compileMap(fd protoreflect.FieldDescriptor, t *chunk.Type) (listSetter, error) {
	if t.Kind != chunk.KindMap {
		return nil, fmt.Errorf("%s cannot go into %s: want a Map, or the Array columns n.key and n.value of a Nested structure n", kindName(fd), t.Name)
	}
	if v := b.o.Version; v != "" && !chunk.VersionAtLeast(v, 21, 8) {
		return nil, fmt.Errorf("ClickHouse %s has no Map type (it came in 21.8): use the Array columns %s.key and %s.value of a Nested structure", v, fd.Name(), fd.Name())
	}
	er := &rec{labels: []string{"map key", "map value"}}
	m := &msgPlan{path: "", name: string(fd.Message().FullName())}
	var errs []error
	for i, efd := range []protoreflect.FieldDescriptor{fd.MapKey(), fd.MapValue()} {
		et := t.Key
		if i == 1 {
			et = t.Elem
		}
		f := fieldPlan{path: string(efd.Name()), num: efd.Number(), kind: kindName(efd), wt: wireType(efd),
			slot: newSlot(er), utf8: efd.Kind() == protoreflect.StringKind && enforceUTF8(efd)}
		em, list, err := b.fieldEmit(efd, et, f.path, i, f.slot, -1)
		if err != nil {
			errs = append(errs, fmt.Errorf("map %s: %w", f.path, err))
			continue
		}
		f.list = list
		m.fields = append(m.fields, f)
		er.emits = append(er.emits, em)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m.index()
	er.msg = m
	key := keyOf(fd.MapKey())
	cols := make([]chunk.Column, 2)
	return func(d *Decoder, r *rec, head int32, col chunk.Column) *decode.Error {
		mc := col.(*chunk.Map)
		head, e := d.dedupe(r, head, key)
		if e != nil {
			return e
		}
		cols[0], cols[1] = mc.Keys, mc.Values
		for o := head; o >= 0; o = r.occ[o].next {
			v := r.occ[o].v
			er.reset()
			if e := d.scan(er, m, v.b, v.off); e != nil {
				return e
			}
			if e := d.emit(er, cols, nil); e != nil {
				return e
			}
		}
		mc.EndRow()
		return nil
	}, nil
}

// msgSetter converts a message field's value: one occurrence (an
// element of a repeated field), or the merge of all of a field's.
type msgSetter struct {
	one   setter
	merge listSetter
}

// compileMessage compiles message type md into column type t: a Tuple,
// or what a well-known type goes into.
func (b *builder) compileMessage(md protoreflect.MessageDescriptor, t *chunk.Type) (*msgSetter, error) {
	t = t.Base()
	if t.Kind == chunk.KindNullable {
		inner, err := b.compileMessage(md, t.Elem.Base())
		if err != nil {
			return nil, err
		}
		return &msgSetter{one: nullable(inner.one), merge: nullableList(inner.merge)}, nil
	}
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return timestampSetter(md, t, b.rg)
	case "google.protobuf.Duration":
		return durationSetter(md, t)
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return jsonSetter(md, t)
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return b.wrapperSetter(md, t)
	}
	if t.Kind != chunk.KindTuple {
		return nil, fmt.Errorf("message %s cannot go into %s: a message goes into a Tuple, or its fields into columns of their own (paths a.b)", md.FullName(), t.Name)
	}
	return b.compileTuple(md, t)
}

// compileTuple compiles message md into Tuple type t: its fields in
// declaration order into the elements of an unnamed tuple (the counts
// must agree), or by name into a named tuple's (fields the tuple lacks
// are skipped, elements the message lacks get their default).
func (b *builder) compileTuple(md protoreflect.MessageDescriptor, t *chunk.Type) (*msgSetter, error) {
	fds := md.Fields()
	names := t.ElemNames
	if names == nil && fds.Len() != len(t.Elems) {
		return nil, fmt.Errorf("message %s has %d fields, %s has %d elements", md.FullName(), fds.Len(), t.Name, len(t.Elems))
	}
	r := &rec{labels: make([]string, len(t.Elems))}
	for j := range t.Elems {
		r.labels[j] = decode.TupleLabel(names, j)
	}
	m := &msgPlan{name: string(md.FullName())}
	filled := make([]bool, len(t.Elems))
	var errs []error
	saved := b.elem
	b.elem = 0 // element types are the tuple's own
	defer func() { b.elem = saved }()
	oneofs := map[protoreflect.OneofDescriptor][][3]int32{}
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		j := i
		if names != nil {
			j = slices.Index(names, string(fd.Name()))
		}
		f := fieldPlan{path: string(fd.Name()), num: fd.Number(), kind: kindName(fd), wt: wireType(fd),
			packed: fd.IsList() && packable(fd.Kind()), slot: -1}
		if j >= 0 {
			f.slot = newSlot(r)
			f.utf8 = fd.Kind() == protoreflect.StringKind && enforceUTF8(fd)
			em, list, err := b.fieldEmit(fd, t.Elems[j], f.path, j, f.slot, -1)
			if err != nil {
				errs = append(errs, fmt.Errorf("field %q -> %s: %w", fd.Name(), r.labels[j], err))
				continue
			}
			f.list = list
			r.emits = append(r.emits, em)
			filled[j] = true
		} else if oo := fd.ContainingOneof(); oo == nil || oo.IsSynthetic() {
			continue // skipped unread
		}
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			lo, hi := f.slot, f.slot+1
			if f.slot < 0 {
				lo, hi = 0, 0
			}
			oneofs[oo] = append(oneofs[oo], [3]int32{int32(len(m.fields)), lo, hi})
		}
		m.fields = append(m.fields, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	groups := make([][][3]int32, 0, len(oneofs))
	for _, g := range oneofs {
		groups = append(groups, g)
	}
	setClears(m, groups)
	var fills []int
	for j, ok := range filled {
		if !ok {
			fills = append(fills, j)
		}
	}
	m.index()
	r.msg = m
	finish := func(d *Decoder, col chunk.Column) *decode.Error {
		tc := col.(*chunk.Tuple)
		if e := d.emit(r, tc.Elems, nil); e != nil {
			return e
		}
		for _, j := range fills {
			tc.Elems[j].AppendDefault()
		}
		tc.EndRow()
		return nil
	}
	return &msgSetter{
		one: func(d *Decoder, v val, col chunk.Column) *decode.Error {
			r.reset()
			if e := d.scan(r, m, v.b, v.off); e != nil {
				return e
			}
			return finish(d, col)
		},
		merge: func(d *Decoder, outer *rec, head int32, col chunk.Column) *decode.Error {
			r.reset()
			for o := head; o >= 0; o = outer.occ[o].next {
				v := &outer.occ[o].v
				if e := d.scan(r, m, v.b, v.off); e != nil {
					return e
				}
			}
			return finish(d, col)
		},
	}, nil
}

// setClears gives each member of a oneof the slots of the other members
// (and of the messages flattened from them), which its occurrence
// empties: the last member on the wire is the oneof's value.
func setClears(m *msgPlan, groups [][][3]int32) {
	for _, members := range groups {
		for _, me := range members {
			var clears []int32
			for _, other := range members {
				if other[0] == me[0] {
					continue
				}
				for s := other[1]; s < other[2]; s++ {
					clears = append(clears, s)
				}
			}
			m.fields[me[0]].clears = clears
		}
	}
}

// scalarRec compiles a rec that reads the scalar fields nums of md
// (slots 0, 1, ... in that order) and emits nothing: a well-known type's
// value is built from its slots.
func scalarRec(md protoreflect.MessageDescriptor, nums ...protowire.Number) (*rec, []val) {
	r := &rec{}
	m := &msgPlan{name: string(md.FullName())}
	zeros := make([]val, len(nums))
	for i, n := range nums {
		fd := md.Fields().ByNumber(n)
		m.fields = append(m.fields, fieldPlan{path: string(fd.Name()), num: n, kind: kindName(fd), wt: wireType(fd),
			slot: newSlot(r), utf8: fd.Kind() == protoreflect.StringKind && enforceUTF8(fd)})
		zeros[i] = zeroOf(fd)
	}
	m.index()
	r.msg = m
	return r, zeros
}

// finishSetter is the msgSetter of a message read by rec r (scalarRec)
// whose value finish appends.
func finishSetter(r *rec, finish func(d *Decoder, r *rec, col chunk.Column) *decode.Error) *msgSetter {
	return &msgSetter{
		one: func(d *Decoder, v val, col chunk.Column) *decode.Error {
			r.reset()
			if e := d.scan(r, r.msg, v.b, v.off); e != nil {
				return e
			}
			return finish(d, r, col)
		},
		merge: func(d *Decoder, outer *rec, head int32, col chunk.Column) *decode.Error {
			r.reset()
			for o := head; o >= 0; o = outer.occ[o].next {
				v := &outer.occ[o].v
				if e := d.scan(r, r.msg, v.b, v.off); e != nil {
					return e
				}
			}
			return finish(d, r, col)
		},
	}
}

// get returns slot i of r, or zero when the scan did not fill it.
func (r *rec) get(i int32, zero *val) *val {
	if r.slots[i].gen == r.gen {
		return &r.slots[i].v
	}
	return zero
}

// wrapperSetter compiles a wrapper type (google.protobuf.Int64Value, ...)
// into t: its value (the zero value when the wrapper is present without
// one).
func (b *builder) wrapperSetter(md protoreflect.MessageDescriptor, t *chunk.Type) (*msgSetter, error) {
	fd := md.Fields().ByNumber(1)
	set, err := compileScalar(fd, t, b.rg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", md.FullName(), err)
	}
	r, zeros := scalarRec(md, 1)
	return finishSetter(r, func(d *Decoder, r *rec, col chunk.Column) *decode.Error {
		return set(d, *r.get(0, &zeros[0]), col)
	}), nil
}

func outOfRange(v int64) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d out of range", v)}
}

func outOfRangeU(v uint64) *decode.Error {
	return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %d out of range", v)}
}

// signedKind reports whether kind k's values are read as int64 (else
// uint64).
func signedKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind, protoreflect.BoolKind:
		return false
	}
	return true
}

// signed is the value of an occurrence of a signed integer kind (or an
// enum's number), as Protobuf's parser reads it: int32 kinds from the low
// 32 bits.
func signed(k protoreflect.Kind, u uint64) int64 {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		return int64(u)
	case protoreflect.Sint64Kind:
		return protowire.DecodeZigZag(u)
	case protoreflect.Sint32Kind:
		return int64(int32(protowire.DecodeZigZag(u & math.MaxUint32)))
	}
	return int64(int32(u)) // int32, sfixed32, enum
}

// unsigned is the value of an occurrence of an unsigned kind (bool: 0 or
// 1).
func unsigned(k protoreflect.Kind, u uint64) uint64 {
	switch k {
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return u
	case protoreflect.BoolKind:
		if u != 0 {
			return 1
		}
		return 0
	}
	return uint64(uint32(u))
}

// compileScalar returns the setter of scalar field fd (one value: an
// element, for a repeated field) into column type t.
func compileScalar(fd protoreflect.FieldDescriptor, t *chunk.Type, rg chunk.ServerRanges) (setter, error) {
	t = t.Base()
	if t.Kind == chunk.KindNullable {
		inner, err := compileScalar(fd, t.Elem, rg)
		if err != nil {
			return nil, err
		}
		return nullable(inner), nil
	}
	k := fd.Kind()
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return compileBytes(fd, t)
	case protoreflect.EnumKind:
		if _, ok := chunk.TextsOf(t); ok && t.Kind != chunk.KindIPv4 && t.Kind != chunk.KindIPv6 && t.Kind != chunk.KindUUID && t.Kind != chunk.KindFixedString {
			return setEnumName(fd.Enum(), t), nil
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return compileFloat(fd, t)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nil, cannot(fd, t)
	}
	// The integer kinds, bool and an enum's number.
	if ints, ok := chunk.IntsOf(t); ok {
		isBool := k == protoreflect.BoolKind
		switch {
		case isBool && t.Kind != chunk.KindBool && t.Kind != chunk.KindInt8 && t.Kind != chunk.KindUInt8:
			return nil, cannot(fd, t)
		case !isBool && t.Kind == chunk.KindBool:
			return nil, cannot(fd, t)
		case signedKind(k):
			if k == protoreflect.Int64Kind && t.Kind == chunk.KindInt64 {
				return setInt64Int64, nil
			}
			return func(d *Decoder, v val, col chunk.Column) *decode.Error {
				x := signed(k, v.u)
				if ints.AppendInt(col, x) != nil {
					return outOfRange(x)
				}
				return nil
			}, nil
		}
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			x := unsigned(k, v.u)
			if ints.AppendUint(col, x) != nil {
				return outOfRangeU(x)
			}
			return nil
		}, nil
	}
	if k == protoreflect.BoolKind {
		return nil, cannot(fd, t)
	}
	if floats, ok := chunk.FloatsOf(t); ok {
		if signedKind(k) {
			return func(d *Decoder, v val, col chunk.Column) *decode.Error {
				_ = floats.AppendInt(col, signed(k, v.u)) // every integer has a nearest float
				return nil
			}, nil
		}
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			_ = floats.AppendFloat(col, float64(unsigned(k, v.u))) // below Float32's maximum
			return nil
		}, nil
	}
	if dec, ok := chunk.DecimalsOf(t); ok {
		if signedKind(k) {
			return func(d *Decoder, v val, col chunk.Column) *decode.Error {
				x := signed(k, v.u)
				if dec.AppendInt(col, x) != nil {
					return &decode.Error{Reason: decode.ReasonOutOfRange,
						Err: fmt.Errorf("value %d has more digits than %s holds", x, t.Name)}
				}
				return nil
			}, nil
		}
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			x := unsigned(k, v.u)
			d.json = strconv.AppendUint(d.json[:0], x, 10)
			if dec.AppendDigits(col, false, d.json, 0) != nil {
				return &decode.Error{Reason: decode.ReasonOutOfRange,
					Err: fmt.Errorf("value %d has more digits than %s holds", x, t.Name)}
			}
			return nil
		}, nil
	}
	if texts, ok := chunk.TextsOf(t); ok && t.Kind == chunk.KindIPv4 && !signedKind(k) && k != protoreflect.Uint64Kind && k != protoreflect.Fixed64Kind {
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			_ = texts.AppendInt(col, int64(unsigned(k, v.u))) // every 32-bit number is an address
			return nil
		}, nil
	}
	return nil, cannot(fd, t)
}

func setInt64Int64(d *Decoder, v val, col chunk.Column) *decode.Error {
	col.(*chunk.Fixed[int64]).Append(int64(v.u))
	return nil
}

// compileFloat compiles a float or double field into a float column.
func compileFloat(fd protoreflect.FieldDescriptor, t *chunk.Type) (setter, error) {
	floats, ok := chunk.FloatsOf(t)
	if !ok {
		return nil, cannot(fd, t)
	}
	if fd.Kind() == protoreflect.FloatKind {
		if t.Kind == chunk.KindFloat32 {
			return func(d *Decoder, v val, col chunk.Column) *decode.Error {
				chunk.AppendFloat32(col, math.Float32frombits(uint32(v.u)))
				return nil
			}, nil
		}
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			_ = floats.AppendFloat(col, float64(math.Float32frombits(uint32(v.u)))) // a float fits both types
			return nil
		}, nil
	}
	if t.Kind == chunk.KindFloat64 {
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			chunk.AppendFloat64(col, math.Float64frombits(v.u))
			return nil
		}, nil
	}
	return func(d *Decoder, v val, col chunk.Column) *decode.Error {
		x := math.Float64frombits(v.u)
		if floats.AppendFloat(col, x) != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %g out of range", x)}
		}
		return nil
	}, nil
}

// compileBytes compiles a string or bytes field into a column of the
// string family, or a Decimal (from its text).
func compileBytes(fd protoreflect.FieldDescriptor, t *chunk.Type) (setter, error) {
	if t.Kind == chunk.KindString {
		return setString, nil
	}
	if dec, ok := chunk.DecimalsOf(t); ok && fd.Kind() == protoreflect.StringKind {
		return func(d *Decoder, v val, col chunk.Column) *decode.Error {
			switch err := dec.AppendText(col, v.b); {
			case err == nil:
				return nil
			case errors.Is(err, chunk.ErrSyntax):
				return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is not a decimal number", decode.Quote(v.b))}
			default:
				return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %s does not fit %s", decode.Quote(v.b), t.Name)}
			}
		}, nil
	}
	texts, ok := chunk.TextsOf(t)
	if !ok {
		return nil, cannot(fd, t)
	}
	raw := fd.Kind() == protoreflect.BytesKind
	return func(d *Decoder, v val, col chunk.Column) *decode.Error {
		var err error
		if raw {
			err = texts.AppendBytes(col, v.b)
		} else {
			err = texts.AppendText(col, v.b)
		}
		switch err {
		case nil:
			return nil
		case chunk.ErrRange:
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("value %s is %s", decode.Quote(v.b), texts.Refusal(err))}
		default:
			return &decode.Error{Reason: decode.ReasonWrongType, Err: fmt.Errorf("value %s is %s", decode.Quote(v.b), texts.Refusal(err))}
		}
	}, nil
}

func setString(d *Decoder, v val, col chunk.Column) *decode.Error {
	chunk.AppendString(col, v.b)
	return nil
}

// setEnumName appends the name of an enum's number to a column of the
// string family (String, Enum8, Enum16): a number the enum does not
// declare, or a name the column's Enum lacks, is out_of_range.
func setEnumName(ed protoreflect.EnumDescriptor, t *chunk.Type) setter {
	texts, _ := chunk.TextsOf(t)
	vals := ed.Values()
	var dense []string
	var sparse map[int32]string
	for i := 0; i < vals.Len(); i++ {
		ev := vals.Get(i)
		n := ev.Number()
		if n >= 0 && n < denseMax {
			for int(n) >= len(dense) {
				dense = append(dense, "")
			}
			if dense[n] == "" {
				dense[n] = string(ev.Name())
			}
			continue
		}
		if sparse == nil {
			sparse = map[int32]string{}
		}
		if _, ok := sparse[int32(n)]; !ok {
			sparse[int32(n)] = string(ev.Name())
		}
	}
	full := string(ed.FullName())
	return func(d *Decoder, v val, col chunk.Column) *decode.Error {
		n := int32(v.u)
		var name string
		if n >= 0 && int(n) < len(dense) {
			name = dense[n]
		} else if sparse != nil {
			name = sparse[n]
		}
		if name == "" {
			return &decode.Error{Reason: decode.ReasonOutOfRange, Err: fmt.Errorf("number %d is not a value of enum %s", n, full)}
		}
		if t.Kind == chunk.KindString {
			chunk.AppendString(col, name)
			return nil
		}
		if texts.AppendString(col, name) != nil {
			return &decode.Error{Reason: decode.ReasonOutOfRange,
				Err: fmt.Errorf("value %s is not a value of the enum", strconv.Quote(name))}
		}
		return nil
	}
}
