package protobuf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
)

// The differential test: random messages of a newer version of the test
// schema (its extra fields unknown to the decoder), two of them
// concatenated (a merge) and their fields shuffled, packed runs unpacked
// or split; decoded by the Decoder and by google.golang.org/protobuf's
// own Unmarshal (into a dynamicpb message of the older schema), whose
// fields a simple reference function converts. Every cell must agree;
// a record the reference says a column cannot hold must be refused.

type diffColumn struct{ name, typ, field string }

var diffColumns = []diffColumn{
	{"i32", "Int32", "i32"}, {"i64", "Int64", "i64"}, {"u32", "UInt32", "u32"}, {"u64", "UInt64", "u64"},
	{"s32", "Int32", "s32"}, {"s64", "Int64", "s64"}, {"f32", "UInt32", "f32"}, {"f64", "UInt64", "f64"},
	{"sf32", "Int32", "sf32"}, {"sf64", "Int64", "sf64"}, {"fl", "Float32", "fl"}, {"db", "Float64", "db"},
	{"bo", "UInt8", "bo"}, {"st", "String", "st"}, {"by", "String", "by"},
	{"color", "Enum8('RED' = 0, 'GREEN' = 1, 'BLUE' = 2)", "color"}, {"color_n", "Int32", "color"},
	{"color_s", "LowCardinality(String)", "color"},
	{"opt_i32", "Nullable(Int32)", "opt_i32"}, {"opt_st", "Nullable(String)", "opt_st"}, {"opt_i32_z", "Int32", "opt_i32"},
	{"p_i32", "Array(Int32)", "p_i32"}, {"p_s64", "Array(Int64)", "p_s64"}, {"p_db", "Array(Float64)", "p_db"},
	{"u_i32", "Array(Int32)", "u_i32"}, {"u_f32", "Array(UInt32)", "u_f32"}, {"r_st", "Array(String)", "r_st"},
	{"colors", "Array(String)", "colors"},
	{"inner_a", "Int32", "inner.a"}, {"inner_a_n", "Nullable(Int32)", "inner.a"}, {"inner_b", "String", "inner.b"},
	{"inner_r", "Array(Int64)", "inner.r"}, {"inner_t", "Tuple(a Int32, b String, r Array(Int64))", "inner"},
	{"items.id", "Array(Int64)", "items.id"}, {"items.name", "Array(String)", "items.name"},
	{"items.score", "Array(Nullable(Float64))", "items.score"}, {"items.tags", "Array(Array(String))", "items.tags"},
	{"items.inner_a", "Array(Int32)", "items.inner.a"},
	{"items_t", "Array(Tuple(Int64, String, Nullable(Float64), Array(String), Tuple(Int32, String, Array(Int64))))", "items"},
	{"m_si", "Map(String, Int64)", "m_si"}, {"m_is", "Map(Int32, String)", "m_is"},
	{"m_sm", "Map(String, Tuple(a Int32, b String, r Array(Int64)))", "m_sm"}, {"m_bd", "Map(UInt8, Float64)", "m_bd"},
	{"msi.key", "Array(String)", "m_si.key"}, {"msi.value", "Array(Int64)", "m_si.value"},
	{"c_i", "Nullable(Int64)", "c_i"}, {"c_s", "Nullable(String)", "c_s"}, {"c_m_a", "Nullable(Int32)", "c_m.a"},
	{"c_m_t", "Tuple(a Int32, b String)", "c_m"},
	{"ts_s", "Nullable(String)", "ts"}, {"ts_64", "Nullable(DateTime64(6))", "ts"}, {"ts_sec", "Int64", "ts.seconds"},
	{"du_s", "String", "du"}, {"du_i", "Int64", "du"}, {"du_d", "Decimal(38, 9)", "du"}, {"du_f", "Float64", "du"},
	{"w_i64", "Nullable(Int64)", "w_i64"}, {"w_st", "Nullable(String)", "w_st"}, {"w_bo", "Nullable(UInt8)", "w_bo"},
	{"w_db", "Nullable(Float64)", "w_db"}, {"w_u32", "UInt32", "w_u32"},
	{"js", "String", "js"}, {"jv", "Nullable(String)", "jv"}, {"jl", "String", "jl"},
	{"opt_color", "Nullable(String)", "opt_color"}, {"far", "Int64", "far"}, {"farther", "String", "farther"},
}

// diffRanged are columns narrower than their fields: the reference says
// which values are out of range.
var diffRanged = []diffColumn{
	{"i64_32", "Int32", "i64"}, {"u64_i64", "Int64", "u64"}, {"s32_u16", "UInt16", "s32"}, {"db_f32", "Float32", "db"},
	{"color_e", "Enum8('RED' = 0, 'GREEN' = 1)", "color"}, {"st_fs", "FixedString(4)", "st"}, {"i32_dec", "Decimal(9, 2)", "i32"},
	{"ts_dt", "DateTime", "ts"}, {"sf64_u8", "Array(UInt8)", "p_i32"},
}

func TestDifferential(t *testing.T) {
	old, newer := newerMessage(t)
	n := 3000
	if testing.Short() {
		n = 500
	}
	type colSet struct {
		name string
		cols []diffColumn
	}
	sets := []colSet{{"exact", diffColumns}}
	// The columns of a plan that takes the fast path (fast.go): no
	// oneof, flattened message or map; the messages in field order
	// (half of them) are read in one pass.
	var fast []diffColumn
	for _, c := range diffColumns {
		if !strings.HasPrefix(c.name, "m_") && !strings.HasPrefix(c.name, "msi.") && !strings.HasPrefix(c.name, "c_") &&
			!strings.Contains(c.field, ".") || strings.HasPrefix(c.name, "items.") && c.name != "items.inner_a" {
			fast = append(fast, c)
		}
	}
	sets = append(sets, colSet{"fast", fast})
	for _, c := range diffRanged {
		// One at a time: a record any of them refuses is not compared.
		sets = append(sets, colSet{"ranged/" + c.name, []diffColumn{c}})
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			var names, fields []string
			for _, c := range set.cols {
				names = append(names, c.name+" "+c.typ)
				fields = append(fields, c.field)
			}
			dec, s := newDecoder(t, old, fields, names...)
			if set.name == "fast" && !fastPlan(dec) {
				t.Fatal("the plan does not take the fast path")
			}
			c := newChunk(t, s)
			rng := rand.New(rand.NewPCG(43, 1))
			refused, rows := 0, 0
			for i := range n {
				wire := randomWire(t, rng, newer)
				ref := dynamicpb.NewMessage(old)
				if err := proto.Unmarshal(wire, ref); err != nil {
					t.Fatalf("message %d: proto.Unmarshal: %v", i, err)
				}
				want := make([]any, len(set.cols))
				var wantErr []string
				for ci, col := range set.cols {
					typ, _ := chunk.ParseType(col.typ)
					v, err := reference(ref, col.field, typ)
					if err != nil {
						wantErr = append(wantErr, col.name+": "+err.Error())
					}
					want[ci] = v
				}
				before := c.Rows
				_, err := dec.Decode(wire, c)
				if err != nil {
					var de *decode.Error
					if !errors.As(err, &de) || de.Reason != decode.ReasonOutOfRange || wantErr == nil {
						t.Fatalf("message %d (%x): Decode: %v; reference: %v", i, wire, err, wantErr)
					}
					refused++
					continue
				}
				if wantErr != nil {
					t.Fatalf("message %d (%x): decoded, but the reference refuses it: %v", i, wire, wantErr)
				}
				rows++
				for ci, col := range set.cols {
					if strings.HasPrefix(col.field, "m_si.") {
						continue // checkMapNested
					}
					got := c.Cols[ci].Row(before)
					if !same(got, want[ci]) {
						t.Fatalf("message %d (%x): column %s (%s) from %q: got %#v, want %#v", i, wire, col.name, col.typ, col.field, got, want[ci])
					}
				}
				// The Nested structure from a map: its keys and values
				// pair up as the map's entries.
				if set.name == "exact" {
					checkMapNested(t, i, c, s, before, ref)
				}
				if c.Rows >= 512 {
					c.Truncate(0)
				}
			}
			if err := checkConsistent(c); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages: %d rows compared, %d refused as the reference says", n, rows, refused)
			if rows < n/20 || strings.HasPrefix(set.name, "ranged/") && refused == 0 {
				t.Fatalf("%d of %d messages decoded, %d refused", rows, n, refused)
			}
		})
	}
}

// fastPlan reports whether d's plan, and that of its Nested structure's
// elements, take the fast path.
func fastPlan(d *Decoder) bool {
	nested := 0
	for _, em := range d.top.emits {
		if em.nested != nil {
			if !em.nested.elem.fastOK {
				return false
			}
			nested++
		}
	}
	return d.top.fastOK && nested == 1
}

func checkMapNested(t *testing.T, i int, c *chunk.Chunk, s *chunk.Schema, row int, ref *dynamicpb.Message) {
	ki, vi := slices.Index(s.Names, "msi.key"), slices.Index(s.Names, "msi.value")
	keys, vals := c.Cols[ki].Row(row).([]any), c.Cols[vi].Row(row).([]any)
	got := map[string]int64{}
	for j := range keys {
		if _, dup := got[keys[j].(string)]; dup {
			t.Fatalf("message %d: msi.key repeats %q", i, keys[j])
		}
		got[keys[j].(string)] = vals[j].(int64)
	}
	want := map[string]int64{}
	ref.Get(ref.Descriptor().Fields().ByName("m_si")).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		want[k.String()] = v.Int()
		return true
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("message %d: msi.key/msi.value %v, want %v", i, got, want)
	}
}

// randomWire returns the wire bytes of one or two random messages of md
// (concatenated), perturbed.
func randomWire(t testing.TB, rng *rand.Rand, md protoreflect.MessageDescriptor) []byte {
	t.Helper()
	var wire []byte
	for k := range 1 + rng.IntN(2) {
		_ = k
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(randomMessage(rng, md, 0))
		if err != nil {
			t.Fatal(err)
		}
		wire = append(wire, b...)
	}
	return perturb(t, rng, md, wire)
}

// perturb returns message b of md with its fields shuffled (half the
// time), packed runs unpacked or split, and the same done inside the
// message fields it holds (half the time each).
func perturb(t testing.TB, rng *rand.Rand, md protoreflect.MessageDescriptor, wire []byte) []byte {
	type field struct {
		num  protowire.Number
		wt   protowire.Type
		data []byte // the whole field, tag included
	}
	var fs []field
	for b := wire; len(b) > 0; {
		num, wt, n := protowire.ConsumeField(b)
		if n < 0 {
			t.Fatalf("own wire: %v", protowire.ParseError(n))
		}
		_, _, tn := protowire.ConsumeTag(b)
		f := field{num, wt, b[:n]}
		// A packed run: as separate values, or as two runs.
		if fd := md.Fields().ByNumber(num); fd != nil && fd.IsList() && wt == protowire.BytesType && packable(fd.Kind()) {
			run, _ := protowire.ConsumeBytes(b[tn:])
			ewt := wireType(fd)
			var elems [][]byte
			for r := run; len(r) > 0; {
				m := protowire.ConsumeFieldValue(num, ewt, r)
				elems = append(elems, r[:m])
				r = r[m:]
			}
			switch rng.IntN(3) {
			case 0:
				for _, e := range elems {
					fs = append(fs, field{num, ewt, append(protowire.AppendTag(nil, num, ewt), e...)})
				}
				b = b[n:]
				continue
			case 1:
				cut := rng.IntN(len(elems) + 1)
				for _, part := range [][][]byte{elems[:cut], elems[cut:]} {
					var body []byte
					for _, e := range part {
						body = append(body, e...)
					}
					fs = append(fs, field{num, wt, protowire.AppendBytes(protowire.AppendTag(nil, num, wt), body)})
				}
				b = b[n:]
				continue
			}
		}
		// A message: perturbed inside.
		if fd := md.Fields().ByNumber(num); fd != nil && fd.Message() != nil && wt == protowire.BytesType && rng.IntN(2) == 0 {
			body, _ := protowire.ConsumeBytes(b[tn:])
			f.data = protowire.AppendBytes(protowire.AppendTag(nil, num, wt), perturb(t, rng, fd.Message(), body))
		}
		fs = append(fs, f)
		b = b[n:]
	}
	if rng.IntN(2) == 0 {
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	}
	var out []byte
	for _, f := range fs {
		out = append(out, f.data...)
	}
	return out
}

// randomMessage fills a message of md with random values, each field
// absent a quarter of the time.
func randomMessage(rng *rand.Rand, md protoreflect.MessageDescriptor, depth int) *dynamicpb.Message {
	m := dynamicpb.NewMessage(md)
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		// Within DateTime64's range (1900..2262), sometimes before 1970.
		m.Set(md.Fields().ByNumber(1), protoreflect.ValueOfInt64(-2208988800+rng.Int64N(9214646400+2208988800)))
		m.Set(md.Fields().ByNumber(2), protoreflect.ValueOfInt32(pick(rng, 0, 1, 999999999, 500000000, rng.Int32N(1e9))))
		return m
	case "google.protobuf.Duration":
		sec := pick(rng, 0, 1, -1, maxDuration, -maxDuration, rng.Int64N(2*maxDuration)-maxDuration)
		ns := pick(rng, 0, 1, 999999999, rng.Int32N(1e9))
		if sec < 0 || sec == 0 && rng.IntN(2) == 0 {
			ns = -ns
		}
		m.Set(md.Fields().ByNumber(1), protoreflect.ValueOfInt64(sec))
		m.Set(md.Fields().ByNumber(2), protoreflect.ValueOfInt32(ns))
		return m
	case "google.protobuf.Value":
		kinds := 4
		if depth < 4 {
			kinds = 6
		}
		switch rng.IntN(kinds) {
		case 0:
			m.Set(md.Fields().ByName("null_value"), protoreflect.ValueOfEnum(0))
		case 1:
			m.Set(md.Fields().ByName("number_value"), protoreflect.ValueOfFloat64(pick(rng, 0, 1.5, -2, 1e21, 1e-7, 123456789, math.MaxFloat64, rng.NormFloat64()*1e6)))
		case 2:
			m.Set(md.Fields().ByName("string_value"), protoreflect.ValueOfString(randomString(rng)))
		case 3:
			m.Set(md.Fields().ByName("bool_value"), protoreflect.ValueOfBool(rng.IntN(2) == 0))
		case 4:
			m.Set(md.Fields().ByName("struct_value"), protoreflect.ValueOfMessage(randomMessage(rng, md.Fields().ByName("struct_value").Message(), depth+1)))
		case 5:
			m.Set(md.Fields().ByName("list_value"), protoreflect.ValueOfMessage(randomMessage(rng, md.Fields().ByName("list_value").Message(), depth+1)))
		}
		return m
	}
	fds := md.Fields()
	oneofs := map[protoreflect.OneofDescriptor]bool{}
	for i := range fds.Len() {
		fd := fds.Get(i)
		if rng.IntN(4) == 0 {
			continue
		}
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			if oneofs[oo] {
				continue
			}
			oneofs[oo] = true
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range rng.IntN(4) {
				k := randomScalar(rng, fd.MapKey()).MapKey()
				if fd.MapValue().Message() != nil {
					mp.Set(k, protoreflect.ValueOfMessage(randomMessage(rng, fd.MapValue().Message(), depth+1)))
				} else {
					mp.Set(k, randomScalar(rng, fd.MapValue()))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range rng.IntN(5) {
				if fd.Message() != nil {
					if depth > 3 {
						break
					}
					l.Append(protoreflect.ValueOfMessage(randomMessage(rng, fd.Message(), depth+1)))
				} else {
					l.Append(randomScalar(rng, fd))
				}
			}
		case fd.Message() != nil:
			if depth <= 3 {
				m.Set(fd, protoreflect.ValueOfMessage(randomMessage(rng, fd.Message(), depth+1)))
			}
		default:
			m.Set(fd, randomScalar(rng, fd))
		}
	}
	return m
}

func pick[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

func randomString(rng *rand.Rand) string {
	return pick(rng, "", "a", "abcd", "abcde", "é", "日本語", "x\x00y", "quote\" back\\ nl\n tab\t \x01\x1f", "\u2028",
		"12.5", "-3", "a-long-string-of-more-than-sixteen-bytes", fmt.Sprint(rng.IntN(10)))
}

func randomScalar(rng *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(rng.IntN(2) == 0)
	case protoreflect.EnumKind:
		n := pick(rng, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 7)
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(pick(rng, 0, 1, -1, 127, 128, 65535, -65536, math.MinInt32, math.MaxInt32, rng.Int32()-rng.Int32()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(pick(rng, 0, 1, -1, math.MinInt32, math.MaxInt32, math.MaxInt32+1, math.MinInt64, math.MaxInt64, rng.Int64()-rng.Int64()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(pick(rng, 0, 1, 255, math.MaxUint32, rng.Uint32()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(pick(rng, 0, 1, math.MaxInt64, math.MaxInt64+1, math.MaxUint64, rng.Uint64()))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(pick(rng, 0, float32(math.Copysign(0, -1)), 1.5, -2.25, math.MaxFloat32, math.SmallestNonzeroFloat32,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), rng.Float32()*1e6))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(pick(rng, 0, math.Copysign(0, -1), 1.5, -2.25, math.MaxFloat64, math.SmallestNonzeroFloat64,
			3.5e38, math.MaxFloat32, math.Inf(1), math.Inf(-1), math.NaN(), rng.NormFloat64()*1e9))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(randomString(rng))
	case protoreflect.BytesKind:
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic(fd.Kind().String())
}

// reference returns what column type t holds for field path p of message
// m, from m's own values: a Go value as chunk.Column.Row gives it, or an
// error for a value t cannot hold.
func reference(m protoreflect.Message, p string, t *chunk.Type) (any, error) {
	parts := strings.Split(p, ".")
	parentAbsent := false
	for len(parts) > 1 {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(parts[0]))
		if fd.IsList() || fd.IsMap() {
			// A Nested column: one element per message (or entry).
			var elems []protoreflect.Message
			if fd.IsMap() {
				// Only the test's m_si (checkMapNested pairs them up):
				// compared as sorted keys and values, not here.
				return nil, nil
			}
			l := m.Get(fd).List()
			for i := range l.Len() {
				elems = append(elems, l.Get(i).Message())
			}
			out := []any{}
			for _, e := range elems {
				v, err := reference(e, strings.Join(parts[1:], "."), t.Elem)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		}
		if !m.Has(fd) {
			parentAbsent = true
		}
		m = m.Get(fd).Message()
		parts = parts[1:]
	}
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(parts[0]))
	t = t.Base()
	absent := parentAbsent || fd.HasPresence() && !m.Has(fd)
	if t.Kind == chunk.KindNullable {
		if absent && !fd.IsList() && !fd.IsMap() {
			return nil, nil
		}
		t = t.Elem.Base()
	}
	return refValue(fd, m.Get(fd), t)
}

var errRange = errors.New("out of range")

// refValue converts the value v of field fd (whole: a list, a map) into
// column type t.
func refValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, t *chunk.Type) (any, error) {
	t = t.Base()
	switch {
	case fd.IsMap():
		var out [][2]any
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			var kv, vv any
			if kv, err = refScalar(fd.MapKey(), k.Value(), t.Key.Base()); err != nil {
				return false
			}
			if vv, err = refOne(fd.MapValue(), mv, t.Elem); err != nil {
				return false
			}
			out = append(out, [2]any{kv, vv})
			return true
		})
		return sortPairs(out), err
	case fd.IsList():
		out := []any{}
		l := v.List()
		for i := range l.Len() {
			e, err := refOne(fd, l.Get(i), t.Elem)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return refOne(fd, v, t)
}

// refOne converts one value (an element) of fd into t.
func refOne(fd protoreflect.FieldDescriptor, v protoreflect.Value, t *chunk.Type) (any, error) {
	t = t.Base()
	if fd.Message() == nil {
		if t.Kind == chunk.KindNullable {
			return refScalar(fd, v, t.Elem.Base())
		}
		return refScalar(fd, v, t)
	}
	m := v.Message()
	if t.Kind == chunk.KindNullable {
		t = t.Elem.Base()
	}
	md := m.Descriptor()
	get := func(n protowire.Number) protoreflect.Value { return m.Get(md.Fields().ByNumber(n)) }
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		sec, ns := get(1).Int(), get(2).Int()
		switch t.Kind {
		case chunk.KindString:
			return protojsonString(m), nil
		case chunk.KindDateTime64:
			tick := int64(math.Pow10(9 - t.Precision))
			return time.Unix(sec, ns/tick*tick).UTC(), nil
		case chunk.KindDateTime:
			if sec < 0 || sec > chunk.NarrowDateTimeMax {
				return nil, errRange
			}
			return sec, nil
		}
	case "google.protobuf.Duration":
		sec, ns := get(1).Int(), get(2).Int()
		if _, err := protojson.Marshal(m.Interface()); err != nil {
			return nil, errRange // a merge of two with different signs
		}
		switch t.Kind {
		case chunk.KindString:
			return protojsonString(m), nil
		case chunk.KindInt64:
			return sec, nil
		case chunk.KindFloat64:
			return float64(sec) + float64(ns)/1e9, nil
		case chunk.KindDecimal:
			sign := ""
			if sec < 0 || ns < 0 {
				sign, sec, ns = "-", -sec, -ns
			}
			if sec == 0 && ns == 0 {
				sign = ""
			}
			return fmt.Sprintf("%s%d.%09d", sign, sec, ns), nil
		}
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		b, err := protojson.Marshal(m.Interface())
		if err != nil {
			return nil, err
		}
		return jsonText(b), nil
	case "google.protobuf.Int64Value", "google.protobuf.StringValue", "google.protobuf.BoolValue",
		"google.protobuf.DoubleValue", "google.protobuf.UInt32Value":
		return refScalar(md.Fields().ByNumber(1), get(1), t)
	}
	if t.Kind != chunk.KindTuple {
		return nil, fmt.Errorf("reference: %s into %s", md.FullName(), t.Name)
	}
	out := make([]any, len(t.Elems))
	for j, et := range t.Elems {
		var efd protoreflect.FieldDescriptor
		if t.ElemNames != nil {
			efd = md.Fields().ByName(protoreflect.Name(t.ElemNames[j]))
		} else {
			efd = md.Fields().Get(j)
		}
		absent := efd.HasPresence() && !m.Has(efd)
		if et.Base().Kind == chunk.KindNullable && absent && !efd.IsList() {
			out[j] = nil
			continue
		}
		e, err := refValue(efd, m.Get(efd), et)
		if err != nil {
			return nil, err
		}
		out[j] = e
	}
	return out, nil
}

// protojsonString is the text protojson gives a Timestamp or Duration.
func protojsonString(m protoreflect.Message) string {
	b, err := protojson.Marshal(m.Interface())
	if err != nil {
		panic(err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		panic(err)
	}
	return s
}

// jsonText is JSON text, compared by the value it denotes.
type jsonText string

func refScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value, t *chunk.Type) (any, error) {
	if fd.Kind() == protoreflect.EnumKind {
		n := v.Enum()
		if t.Kind == chunk.KindInt32 {
			return int32(n), nil
		}
		ev := fd.Enum().Values().ByNumber(n)
		if ev == nil {
			return nil, errRange
		}
		if t.Kind == chunk.KindEnum8 {
			if _, ok := t.Enum[string(ev.Name())]; !ok {
				return nil, errRange
			}
		}
		return string(ev.Name()), nil
	}
	var i int64
	var u uint64
	signedV := true
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Bool() {
			u = 1
		}
		signedV = false
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u, signedV = v.Uint(), false
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Int64Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		i = v.Int()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f := v.Float()
		switch t.Kind {
		case chunk.KindFloat32:
			if fd.Kind() == protoreflect.DoubleKind && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
				return nil, errRange
			}
			return float32(f), nil
		case chunk.KindFloat64:
			return f, nil
		}
	case protoreflect.StringKind, protoreflect.BytesKind:
		s := v.String()
		if fd.Kind() == protoreflect.BytesKind {
			s = string(v.Bytes())
		}
		switch t.Kind {
		case chunk.KindString:
			return s, nil
		case chunk.KindFixedString:
			if len(s) > t.Len {
				return nil, errRange
			}
			return s, nil
		}
	}
	if !signedV {
		if u > math.MaxInt64 {
			if t.Kind == chunk.KindUInt64 {
				return u, nil
			}
			return nil, errRange
		}
		i = int64(u)
	}
	fits := func(lo, hi int64) error {
		if i < lo || i > hi {
			return errRange
		}
		return nil
	}
	switch t.Kind {
	case chunk.KindInt32:
		return int32(i), fits(math.MinInt32, math.MaxInt32)
	case chunk.KindInt64:
		return i, nil
	case chunk.KindUInt8:
		return uint8(i), fits(0, math.MaxUint8)
	case chunk.KindUInt16:
		return uint16(i), fits(0, math.MaxUint16)
	case chunk.KindUInt32:
		return uint32(i), fits(0, math.MaxUint32)
	case chunk.KindUInt64:
		return uint64(i), fits(0, math.MaxInt64)
	case chunk.KindDecimal:
		if err := fits(-9999999, 9999999); err != nil {
			return nil, err
		}
		return fmt.Sprintf("%d.00", i), nil
	}
	return nil, fmt.Errorf("reference: %s into %s", fd.Kind(), t.Name)
}

func sortPairs(p [][2]any) [][2]any {
	slices.SortFunc(p, func(a, b [2]any) int { return strings.Compare(fmt.Sprintf("%#v", a[0]), fmt.Sprintf("%#v", b[0])) })
	return p
}

// same compares a cell with the reference's value: maps as sets of
// entries, JSON by the value it denotes, floats by their bits' meaning
// (NaN equals NaN), the rest by their Go syntax.
func same(got, want any) bool {
	switch w := want.(type) {
	case jsonText:
		g, ok := got.(string)
		if !ok {
			return false
		}
		var gv, wv any
		if json.Unmarshal([]byte(g), &gv) != nil || json.Unmarshal([]byte(w), &wv) != nil {
			return false
		}
		return reflect.DeepEqual(gv, wv)
	case [][2]any:
		g, ok := got.([][2]any)
		if !ok || len(g) != len(w) {
			return false
		}
		g = sortPairs(slices.Clone(g))
		for i := range g {
			if !same(g[i][0], w[i][0]) || !same(g[i][1], w[i][1]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range g {
			if !same(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return fmt.Sprintf("%#v", got) == fmt.Sprintf("%#v", want)
}
