package transform

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/config"
)

// The envelope step (decode.envelope: debezium) is compiled first in the
// chain. The decoder stages the change event's fields like any nested
// fields (before.id, after.id, op, source.lsn, ..., under payload. too
// when the wrapper may be there); the step turns the event into zero, one
// or two rows of the row schema (the row's own fields and the envelope's
// fields below), held in a chunk of its own that the rest of the chain
// runs over, one row at a time.

// ReasonCorrupt: a record is not a change event (no op where the wrapper
// setting looks for it), or lacks what its operation needs (the key in
// before or after, the source position its version is taken from).
const ReasonCorrupt = "corrupt"

// The envelope's fields, which each row carries beside its own.
const (
	FieldVersion   = "_version"
	FieldDeleted   = "_deleted"
	FieldSign      = "_sign"
	FieldOp        = "_op"
	fieldSrcTsMs   = "_source.ts_ms"
	fieldSrcLSN    = "_source.lsn"
	fieldSrcFile   = "_source.file"
	fieldSrcPos    = "_source.pos"
	fieldSrcConn   = "_source.connector"
	fieldTxID      = "_transaction.id"
	fieldEventTsMs = "_ts_ms"
	fieldTombstone = "_tombstone"
)

// EnvelopeFields are the types of the fields the envelope step gives
// each row: declared to InputsKnown beside decode.fields, they type the
// chain's input.
var EnvelopeFields = map[string]string{
	FieldVersion: "UInt64", FieldDeleted: "UInt8", FieldSign: "Int8", FieldOp: "String",
	fieldSrcTsMs: "Int64", fieldSrcLSN: "UInt64", fieldSrcFile: "String", fieldSrcPos: "UInt64",
	fieldSrcConn: "String", fieldTxID: "String", fieldEventTsMs: "Int64",
}

// eventField is a field of the event staged under each prefix: its
// staging type (Nullable: a null is as good as a missing field) and the
// row field that carries it.
type eventField struct{ name, typ, row string }

var eventFields = [...]eventField{
	{"source.ts_ms", "Nullable(Int64)", fieldSrcTsMs},
	{"source.lsn", "Nullable(UInt64)", fieldSrcLSN},
	{"source.file", "Nullable(String)", fieldSrcFile},
	{"source.pos", "Nullable(UInt64)", fieldSrcPos},
	{"source.connector", "Nullable(String)", fieldSrcConn},
	{"transaction.id", "Nullable(String)", fieldTxID},
	{"ts_ms", "Nullable(Int64)", fieldEventTsMs},
}

const (
	evTsMs = iota
	evLSN
	evFile
	evPos
	evConn
	evTxID
	evEventTsMs
	nEvent
)

// layout is the staging columns of one prefix ("" or "payload.").
type layout struct {
	prefix string
	op     int
	img    [2][]int // img[0][j], img[1][j]: before and after of image field j
	ev     [nEvent]int
}

// rowCol says how the envelope fills a column of the row schema.
type rowCol struct {
	kind  uint8
	img   int // image field index (colImage)
	stage int // staging column (colPass)
	ev    int // event field (colEvent)
}

const (
	colImage = iota
	colPass
	colVersion
	colDeleted
	colSign
	colOp
	colEvent
)

// Envelope is a compiled envelope step. It is immutable; its run-time
// state lives in each chain's runtime.
type Envelope struct {
	stage, rows *chunk.Schema
	collapsing  bool
	version     string
	image       []string // the image fields
	keys        []int    // image indexes of the key fields
	keyList     string   // the key fields' names, for messages
	keyEq       []func(a, b chunk.Column, i int) bool
	sets        []layout
	cols        []rowCol
	tomb        int // the staging column of _tombstone, or -1
}

// NewDebezium compiles the envelope step of d (config.DebeziumSettings)
// for rows of schema rows: the chain's input schema, derived by
// InputsKnown with EnvelopeFields declared. Every field of rows whose name
// does not start with "_" is a field of the row images (before and
// after); the other fields are the envelope's or are passed through from
// the staging chunk (metadata such as _offset or _key.id). keyTypes types
// the key fields the rows do not carry (decode.fields).
func NewDebezium(d config.Debezium, rows *chunk.Schema, keyTypes map[string]string) (*Envelope, error) {
	e := &Envelope{rows: rows, collapsing: d.Mode == config.DebeziumCollapsing, version: d.Version, tomb: -1}
	if len(d.Key) == 0 {
		return nil, errors.New("decode.debezium.key: the envelope needs the source table's key fields")
	}
	types := map[string]*chunk.Type{}
	for i, n := range rows.Names {
		if want, ok := EnvelopeFields[n]; ok {
			if canon(rows.Types[i]) != want {
				return nil, fmt.Errorf("field %s is %s here, but the envelope gives it as %s: declare it as %s", n, rows.Types[i].Name, want, want)
			}
			continue
		}
		if !strings.HasPrefix(n, "_") {
			e.image = append(e.image, n)
			types[n] = rows.Types[i]
		}
	}
	for _, k := range d.Key {
		j := slices.Index(e.image, k)
		if j < 0 {
			t, err := chunk.ParseType(keyTypes[k])
			if keyTypes[k] == "" || err != nil {
				return nil, fmt.Errorf("decode.debezium.key: key field %q has no type: declare it in decode.fields", k)
			}
			e.image = append(e.image, k)
			types[k] = t
			j = len(e.image) - 1
		}
		e.keys = append(e.keys, j)
		e.keyEq = append(e.keyEq, equalFunc(types[k]))
	}
	e.keyList = strings.Join(d.Key, ", ")
	var prefixes []string
	switch d.Wrapper {
	case config.WrapperPayload:
		prefixes = []string{"payload."}
	case config.WrapperNone:
		prefixes = []string{""}
	default:
		prefixes = []string{"", "payload."}
	}
	stage := &chunk.Schema{}
	add := func(name string, t *chunk.Type) int {
		stage.Names = append(stage.Names, name)
		stage.Types = append(stage.Types, t)
		return len(stage.Names) - 1
	}
	str, _ := chunk.ParseType("String")
	for _, p := range prefixes {
		l := layout{prefix: p, op: add(p+"op", str)}
		for w, img := range [2]string{"before.", "after."} {
			for _, f := range e.image {
				l.img[w] = append(l.img[w], add(p+img+f, types[f]))
			}
		}
		for k, ef := range eventFields {
			t, err := chunk.ParseType(ef.typ)
			if err != nil {
				return nil, err
			}
			l.ev[k] = add(p+ef.name, t)
		}
		e.sets = append(e.sets, l)
	}
	for i, n := range rows.Names {
		rc := rowCol{}
		switch n {
		case FieldVersion:
			rc.kind = colVersion
		case FieldDeleted:
			rc.kind = colDeleted
		case FieldSign:
			rc.kind = colSign
		case FieldOp:
			rc.kind = colOp
		default:
			if j := slices.Index(e.image, n); j >= 0 {
				rc.kind, rc.img = colImage, j
				break
			}
			if k := slices.IndexFunc(eventFields[:], func(ef eventField) bool { return ef.row == n }); k >= 0 {
				rc.kind, rc.ev = colEvent, k
				break
			}
			rc.kind, rc.stage = colPass, add(n, rows.Types[i])
			if n == fieldTombstone {
				e.tomb = rc.stage
			}
		}
		e.cols = append(e.cols, rc)
	}
	e.stage = stage
	return e, nil
}

// Stage is the staging schema the decoder fills for the envelope.
func (e *Envelope) Stage() *chunk.Schema { return e.stage }

// equalFunc compares row i of two columns of type t.
func equalFunc(t *chunk.Type) func(a, b chunk.Column, i int) bool {
	base := t.Base()
	if base.Kind == chunk.KindNullable {
		inner := equalFunc(base.Elem)
		return func(a, b chunk.Column, i int) bool {
			na, nb := a.(*chunk.Nullable), b.(*chunk.Nullable)
			if na.Nulls[i] != 0 || nb.Nulls[i] != 0 {
				return na.Nulls[i] == nb.Nulls[i]
			}
			return inner(na.Inner, nb.Inner, i)
		}
	}
	if k, ok := chunk.KeyOf(t); ok {
		switch {
		case k.Width > 0:
			return func(a, b chunk.Column, i int) bool { return k.Bits(a, i) == k.Bits(b, i) }
		case k.Text != nil:
			return func(a, b chunk.Column, i int) bool { return k.Text(a, i) == k.Text(b, i) }
		case k.Words != nil:
			return func(a, b chunk.Column, i int) bool { return slices.Equal(k.Words(a, i), k.Words(b, i)) }
		}
	}
	// UUID, Decimal and the composite types: compared as Go values.
	return func(a, b chunk.Column, i int) bool { return reflect.DeepEqual(a.Row(i), b.Row(i)) }
}

// envRT is the envelope's per-chain run-time state.
type envRT struct {
	rows *chunk.Chunk // the rows of the current event
}

func (e *Envelope) newRT() *envRT {
	c, err := chunk.New(e.rows)
	if err != nil {
		// The row schema is the chain's input schema, whose columns were
		// built before.
		panic(fmt.Sprintf("transform: the envelope's rows: %v", err))
	}
	return &envRT{rows: c}
}

// absent reports whether staging column col lacked a value in row.
func absent(in *chunk.Chunk, col, row int) bool {
	return col < len(in.Absent) && int(in.Absent[col]) > row
}

// present reports whether image w of l carries every key field.
func (e *Envelope) present(in *chunk.Chunk, l *layout, w, row int) bool {
	for _, j := range e.keys {
		c := l.img[w][j]
		if absent(in, c, row) {
			return false
		}
		if n, ok := in.Cols[c].(*chunk.Nullable); ok && n.Nulls[row] != 0 {
			return false
		}
	}
	return true
}

// keyChanged reports whether before and after differ in a key field.
func (e *Envelope) keyChanged(in *chunk.Chunk, l *layout, row int) bool {
	for k, j := range e.keys {
		if !e.keyEq[k](in.Cols[l.img[0][j]], in.Cols[l.img[1][j]], row) {
			return true
		}
	}
	return false
}

// evInt returns event field k of l as an integer, and false when it is
// missing or null.
func evInt(in *chunk.Chunk, l *layout, k, row int) (uint64, bool) {
	c := l.ev[k]
	n := in.Cols[c].(*chunk.Nullable)
	if absent(in, c, row) || n.Nulls[row] != 0 {
		return 0, false
	}
	switch v := n.Inner.(type) {
	case *chunk.Fixed[int64]:
		return uint64(v.Data[row]), true
	case *chunk.Fixed[uint64]:
		return v.Data[row], true
	}
	return 0, false
}

// evString returns event field k of l, "" when missing or null.
func evString(in *chunk.Chunk, l *layout, k, row int) string {
	n := in.Cols[l.ev[k]].(*chunk.Nullable)
	if n.Nulls[row] != 0 {
		return ""
	}
	return n.Inner.(*chunk.Strings).Value(row)
}

func corrupt(format string, args ...any) *Error {
	return &Error{Reason: ReasonCorrupt, Step: "decode.envelope", Err: fmt.Errorf(format, args...)}
}

// The reasons the envelope skips an event (etl_cdc_skipped_total).
const (
	SkipTruncate  = "truncate"
	SkipMessage   = "message"
	SkipUnknownOp = "unknown_op"
)

// event is one change event being turned into rows.
type event struct {
	in      *chunk.Chunk
	row     int
	l       *layout
	op      string
	version uint64
}

// fill turns staging row row of in (offset: the record's Kafka offset)
// into the rows of er.rows. It returns the reason the event is skipped
// ("" when it is not), or the error that makes it a bad record.
func (e *Envelope) fill(er *envRT, in *chunk.Chunk, row int, offset int64) (string, *Error) {
	out := er.rows
	out.Reset()
	if in.Schema != e.stage && (in.Schema == nil || !slices.Equal(in.Schema.Names, e.stage.Names)) {
		return "", &Error{Reason: ReasonTransform, Step: "decode.envelope", Err: errors.New("the staging chunk's schema is not the envelope's")}
	}
	if e.tomb >= 0 && isTombstone(in.Cols[e.tomb], row) {
		// A tombstone the chain reads (_tombstone): one row of the
		// passed-through fields, the rest their defaults.
		e.tombstone(in, row, out)
		return "", nil
	}
	var l *layout
	for i := range e.sets {
		if !absent(in, e.sets[i].op, row) {
			l = &e.sets[i]
			break
		}
	}
	if l == nil {
		var where []string
		for _, s := range e.sets {
			where = append(where, s.prefix+"op")
		}
		return "", corrupt("not a Debezium change event: it has no %s field", strings.Join(where, " nor "))
	}
	ev := event{in: in, row: row, l: l, op: in.Cols[l.op].(*chunk.Strings).Value(row)}
	switch ev.op {
	case "c", "r", "u", "d":
	case "":
		return "", corrupt("the change event's %sop is empty", l.prefix)
	case "t":
		return SkipTruncate, nil
	case "m":
		return SkipMessage, nil
	default:
		return SkipUnknownOp, nil
	}
	v, err := e.versionOf(in, l, row, offset)
	if err != nil {
		return "", err
	}
	ev.version = v
	hasBefore, hasAfter := e.present(in, l, 0, row), e.present(in, l, 1, row)
	keys := e.keyList
	switch ev.op {
	case "c", "r":
		if !hasAfter {
			return "", corrupt("the change event (op %s) has no %safter with its key (%s)", ev.op, l.prefix, keys)
		}
		e.emit(&ev, 1, 1, 0, out)
	case "u":
		if !hasAfter {
			return "", corrupt("the update has no %safter with its key (%s)", l.prefix, keys)
		}
		switch {
		case e.collapsing:
			if !hasBefore {
				return "", corrupt("the update has no %sbefore with its key (%s): the collapsing mode cancels the old row from it (the source table must send the old row, e.g. PostgreSQL's REPLICA IDENTITY FULL)", l.prefix, keys)
			}
			deleted := uint8(0)
			if e.keyChanged(in, l, row) {
				deleted = 1
			}
			e.emit(&ev, 0, -1, deleted, out)
		case hasBefore && e.keyChanged(in, l, row):
			e.emit(&ev, 0, -1, 1, out)
		}
		e.emit(&ev, 1, 1, 0, out)
	case "d":
		if !hasBefore {
			return "", corrupt("the delete has no %sbefore with its key (%s) (the source table must send the old row's key, e.g. PostgreSQL's REPLICA IDENTITY DEFAULT with a primary key)", l.prefix, keys)
		}
		e.emit(&ev, 0, -1, 1, out)
	}
	return "", nil
}

// Largest values of the version's parts.
const (
	maxBinlogPart = 1<<32 - 1
	maxTsMs       = 1<<44 - 1
	offsetBits    = 20
)

// versionOf computes the event's _version (decode.debezium.version).
func (e *Envelope) versionOf(in *chunk.Chunk, l *layout, row int, offset int64) (uint64, *Error) {
	how := e.version
	if how == config.VersionAuto || how == "" {
		switch evString(in, l, evConn, row) {
		case "postgresql":
			how = config.VersionLSN
		case "mysql":
			how = config.VersionBinlog
		default:
			how = config.VersionTsMs
		}
	}
	switch how {
	case config.VersionLSN:
		lsn, ok := evInt(in, l, evLSN, row)
		if !ok {
			return 0, corrupt("the version is the LSN, but the event has no %ssource.lsn", l.prefix)
		}
		return lsn, nil
	case config.VersionBinlog:
		file := evString(in, l, evFile, row)
		pos, ok := evInt(in, l, evPos, row)
		if file == "" || !ok {
			return 0, corrupt("the version is the binlog position, but the event has no %ssource.file and %ssource.pos", l.prefix, l.prefix)
		}
		dot := strings.LastIndexByte(file, '.')
		digits := file[dot+1:]
		if dot < 0 || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return 0, corrupt("the binlog file %q does not end in .NUMBER", file)
		}
		n, perr := strconv.ParseUint(digits, 10, 64)
		if perr != nil || n > maxBinlogPart {
			return 0, corrupt("the binlog file number of %q is 2^32 or more: it does not fit the version", file)
		}
		if pos > maxBinlogPart {
			return 0, corrupt("the binlog position %d is 2^32 or more: it does not fit the version", pos)
		}
		return n<<32 | pos, nil
	default:
		ts, ok := evInt(in, l, evTsMs, row)
		if !ok {
			return 0, corrupt("the version is the time, but the event has no %ssource.ts_ms", l.prefix)
		}
		if ts > maxTsMs {
			return 0, corrupt("source.ts_ms %d is out of the version's range (2^44 ms)", int64(ts))
		}
		return ts<<offsetBits | uint64(offset)&(1<<offsetBits-1), nil
	}
}

// emit appends the row of image w (0 before, 1 after) of the event.
func (e *Envelope) emit(ev *event, w int, sign int8, deleted uint8, out *chunk.Chunk) {
	in, row, l := ev.in, ev.row, ev.l
	for ci, rc := range e.cols {
		dst := out.Cols[ci]
		switch rc.kind {
		case colImage:
			src := l.img[w][rc.img]
			if absent(in, src, row) {
				out.MarkAbsent(ci)
			}
			dst.AppendFrom(in.Cols[src], row)
		case colPass:
			if absent(in, rc.stage, row) {
				out.MarkAbsent(ci)
			}
			dst.AppendFrom(in.Cols[rc.stage], row)
		case colVersion:
			dst.(*chunk.Fixed[uint64]).Append(ev.version)
		case colDeleted:
			dst.(*chunk.Fixed[uint8]).Append(deleted)
		case colSign:
			dst.(*chunk.Fixed[int8]).Append(sign)
		case colOp:
			dst.(*chunk.Strings).AppendString(ev.op)
		case colEvent:
			e.appendEvent(in, l, rc.ev, row, dst)
		}
	}
	out.Rows++
}

// appendEvent appends event field k (0 or "" when missing).
func (e *Envelope) appendEvent(in *chunk.Chunk, l *layout, k, row int, dst chunk.Column) {
	switch d := dst.(type) {
	case *chunk.Strings:
		d.AppendString(evString(in, l, k, row))
	case *chunk.Fixed[int64]:
		v, _ := evInt(in, l, k, row)
		d.Append(int64(v))
	case *chunk.Fixed[uint64]:
		v, _ := evInt(in, l, k, row)
		d.Append(v)
	}
}

// tombstone appends the row of a tombstone: the passed-through fields,
// every other its default.
func (e *Envelope) tombstone(in *chunk.Chunk, row int, out *chunk.Chunk) {
	for ci, rc := range e.cols {
		if rc.kind == colPass {
			out.Cols[ci].AppendFrom(in.Cols[rc.stage], row)
			continue
		}
		out.Cols[ci].AppendDefault()
	}
	out.Rows++
}

// isTombstone reads _tombstone (Bool, or an integer column it feeds
// unchanged).
func isTombstone(c chunk.Column, row int) bool {
	switch c := c.(type) {
	case *chunk.Fixed[bool]:
		return c.Data[row]
	case *chunk.Fixed[uint8]:
		return c.Data[row] != 0
	}
	return false
}
