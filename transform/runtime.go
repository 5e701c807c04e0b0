package transform

import (
	"fmt"
	"unsafe"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/valyala/fastjson"
)

// kind is the kind of an expression value.
type kind uint8

const (
	kNull   kind = iota // the nil literal: a NULL of no type yet
	kBool               // bool
	kInt                // int64
	kUInt               // uint64
	kFloat              // float64
	kString             // string (bytes, not necessarily UTF-8)
	kTime               // int64 nanoseconds since the epoch, UTC
)

var kindNames = [...]string{"Null", "Bool", "Int64", "UInt64", "Float64", "String", "Time"}

// vtype is the static type of an expression: a kind, possibly Nullable.
type vtype struct {
	k    kind
	null bool
}

func (t vtype) String() string {
	if t.null && t.k != kNull {
		return "Nullable(" + kindNames[t.k] + ")"
	}
	return kindNames[t.k]
}

func (t vtype) numeric() bool { return t.k == kInt || t.k == kUInt || t.k == kFloat }

// slot holds the value of a field derived by a set step.
type slot struct {
	i    int64 // kInt, kTime, kUInt (as its bits)
	f    float64
	s    string
	b    bool
	null bool
}

// rt is the per-record state the compiled closures work on. Everything a
// closure needs at run time is reached from here, so the compiled program
// is immutable and shared by the clones of a chain.
type rt struct {
	in *chunk.Chunk
	// measure: the flatten of this record is measured against
	// program.lim.MaxBytes (touched.size is set).
	measure bool
	// sealed is the bytes of the flatten's rows in chunks sealed in its
	// middle (Sealer), counted against lim.MaxBytes with the rest.
	sealed int
	// cols[k] is staging column k (the Array's Inner for a flattened
	// element column), bound at the start of each record.
	cols []chunk.Column
	// at[0] is the staging row, at[1] the index of the current element of
	// the flattened arrays in their Inner columns.
	at [2]int
	// slots hold the fields derived by set steps.
	slots []slot
	// scratch holds the strings expressions build; it is reset for every
	// record (and to the record's mark for every element), never shrunk.
	scratch []byte
	// sink is the sink a route step chose, -1 for every sink.
	sink int
	// topic is the Kafka topic of the record (Chain.SetTopic), for route
	// rules with a topic.
	topic string
	// offset is the Kafka offset of the record (Chain.SetOffset).
	offset int64
	err    *Error
	// env is the envelope step's state, when the chain has one.
	env *envRT

	// json caches the last document parsed by a json_* function.
	jp      fastjson.Parser
	jsrc    *byte
	jlen    int
	jv      *fastjson.Value
	jparsed bool
	jbig    bool // a document larger than keepParserBytes was parsed: drop jp at the reset

	// touched are the chunks appended to for the current record.
	touched []touched
	// keys[o] is a one-value column for output o's shard key.
	keys []chunk.Column
	// schemaOK is a staging schema other than the compiled one found to
	// be spelled the same.
	schemaOK *chunk.Schema
}

type touched struct {
	sink, shard int
	ch          *chunk.Chunk
	rows        int
	size        int // ch's measured size when first touched, when rt.measure
}

// fail records the first error of the record; the step is filled in by the
// caller that knows it when step is "".
func (r *rt) fail(reason, step string, err error) {
	if r.err == nil {
		r.err = &Error{Reason: reason, Step: step, Err: err}
	}
}

func (r *rt) failf(reason, format string, args ...any) {
	if r.err == nil {
		r.err = &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
	}
}

// str returns scratch[start:] as a string sharing the scratch memory.
func (r *rt) str(start int) string {
	n := len(r.scratch) - start
	if n <= 0 {
		return ""
	}
	return unsafe.String(&r.scratch[start], n)
}

// save copies b into the scratch and returns it as a string.
func (r *rt) save(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	start := len(r.scratch)
	r.scratch = append(r.scratch, b...)
	return r.str(start)
}

// resetJSON forgets the cached JSON document: the memory its source string
// lived in may be reused. After a large document it drops the parser too,
// whose cache would otherwise keep every value of it (about 200 bytes per
// value) for as long as the runtime lives.
func (r *rt) resetJSON() {
	r.jsrc, r.jlen, r.jv, r.jparsed = nil, 0, nil, false
	if r.jbig {
		r.jp, r.jbig = fastjson.Parser{}, false
	}
}

// keepParserBytes is the largest JSON document whose parse tree the
// runtime keeps for the next record (as the JSON decoder does).
const keepParserBytes = 32 << 10

// json parses s, reusing the last parse when s is the same string (same
// memory and length: strings are never changed in place within a record
// or element). It returns nil for text that is not JSON, and for a string
// escape ClickHouse's JSON input refuses or alters (a lone surrogate, an
// unknown escape: decode.JSONEscapeLen), which fastjson would keep or turn
// into U+FFFD, dropping the next character.
func (r *rt) json(s string) *fastjson.Value {
	p := unsafe.StringData(s)
	if r.jparsed && p == r.jsrc && len(s) == r.jlen {
		return r.jv
	}
	if len(s) > keepParserBytes {
		r.jbig = true
	}
	v, err := r.jp.Parse(s)
	if err != nil || decode.BadJSONEscape(unsafe.Slice(p, len(s))) >= 0 {
		v = nil
	}
	r.jsrc, r.jlen, r.jv, r.jparsed = p, len(s), v, true
	return v
}
