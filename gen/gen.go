// Package gen makes deterministic test data: record n of a data set with a
// given seed is a pure function of (seed, n), so a test can recompute and
// check every value that reached ClickHouse.
package gen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etl-project/etl/chunk"
)

// Event is one generated record.
type Event struct {
	ID     uint64
	TS     time.Time // whole seconds, UTC
	UserID uint32
	Kind   string
	Amount float64
	Note   *string // nil when ID%7 == 0
}

// Column is one column of the table generated events go to.
type Column struct {
	Name, Type string
}

// Columns are the JSON fields of an event and the ClickHouse columns they
// go to, in order.
var Columns = []Column{
	{"id", "UInt64"},
	{"ts", "DateTime"},
	{"user_id", "UInt32"},
	{"kind", "String"},
	{"amount", "Float64"},
	{"note", "Nullable(String)"},
}

// Schema returns the chunk schema of Columns.
func Schema() (*chunk.Schema, error) {
	s := &chunk.Schema{}
	for _, c := range Columns {
		t, err := chunk.ParseType(c.Type)
		if err != nil {
			return nil, err
		}
		s.Names = append(s.Names, c.Name)
		s.Types = append(s.Types, t)
	}
	return s, nil
}

// Kinds are the words Event.Kind is drawn from.
var Kinds = [8]string{"view", "click", "purchase", "signup", "login", "logout", "refund", "share"}

// Epoch is the earliest Event.TS; timestamps spread over the 365 days
// from it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// noteRunes are the characters notes are made of: JSON-special ones (quote,
// backslash, control characters), non-ASCII letters and plain ASCII.
var noteRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 " +
	"abcdefghijklmnopqrstuvwxyz \"\\\t\nééüßжñ€/<>")

// mix is the SplitMix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// stream yields independent 64-bit hashes for record (seed, n).
type stream struct{ s uint64 }

func newStream(seed int64, n uint64) stream {
	return stream{s: mix(uint64(seed)^0x9e3779b97f4a7c15) + n*0xd1b54a32d192ed03}
}

func (r *stream) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// Make returns record n of the data set with the given seed. It is pure:
// the same (seed, n) always gives the same event.
func Make(seed int64, n uint64) Event {
	r := newStream(seed, n)
	e := Event{
		ID:     n,
		TS:     Epoch.Add(time.Duration(r.next()%(86400*365)) * time.Second),
		UserID: uint32(r.next()),
		Kind:   Kinds[r.next()%uint64(len(Kinds))],
		Amount: float64(r.next()%1_000_000) / 100,
	}
	h := r.next()
	if n%7 == 0 {
		return e
	}
	var b strings.Builder
	length := int(h % 41)
	for range length {
		b.WriteRune(noteRunes[r.next()%uint64(len(noteRunes))])
	}
	note := b.String()
	e.Note = &note
	return e
}

// TSForm is how AppendJSON writes an event's timestamp.
type TSForm int

// Timestamp forms.
const (
	TSMixed   TSForm = iota // each record's own: TSFormOf(id)
	TSRFC3339               // "2026-03-04T05:06:07Z"
	TSSeconds               // 1772600767
	TSMillis                // 1772600767000
)

// ParseTSForm returns the form named s: mixed, rfc3339, seconds or millis.
func ParseTSForm(s string) (TSForm, error) {
	for f, name := range tsFormNames {
		if s == name {
			return TSForm(f), nil
		}
	}
	return 0, fmt.Errorf("timestamp form %q is not one of mixed, rfc3339, seconds, millis", s)
}

var tsFormNames = [...]string{"mixed", "rfc3339", "seconds", "millis"}

func (f TSForm) String() string {
	if f >= 0 && int(f) < len(tsFormNames) {
		return tsFormNames[f]
	}
	return "TSForm(" + strconv.Itoa(int(f)) + ")"
}

// TSFormOf returns the form record id's timestamp is written in: epoch
// milliseconds for every 5th id, epoch seconds for every other 3rd id,
// RFC 3339 otherwise.
func TSFormOf(id uint64) TSForm {
	switch {
	case id%5 == 0:
		return TSMillis
	case id%3 == 0:
		return TSSeconds
	}
	return TSRFC3339
}

// AppendJSON appends e as a JSON object:
//
//	{"id":1,"ts":"2026-03-04T05:06:07Z","user_id":2,"kind":"view","amount":12.34,"note":"x"}
//
// with "note":null when Note is nil and ts in the form TSFormOf(e.ID)
// gives. Amount is written with strconv's shortest form, so it parses back
// to exactly the same float64.
func (e Event) AppendJSON(dst []byte) []byte { return e.AppendJSONTS(dst, TSMixed) }

// AppendJSONTS is AppendJSON with ts in form f (TSMixed: TSFormOf(e.ID)).
// A uniform form suits a reader that takes only one, such as ClickHouse's
// JSONEachRow, which reads epoch seconds into DateTime.
func (e Event) AppendJSONTS(dst []byte, f TSForm) []byte {
	if f == TSMixed {
		f = TSFormOf(e.ID)
	}
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, e.ID, 10)
	dst = append(dst, `,"ts":`...)
	switch f {
	case TSMillis:
		dst = strconv.AppendInt(dst, e.TS.UnixMilli(), 10)
	case TSSeconds:
		dst = strconv.AppendInt(dst, e.TS.Unix(), 10)
	default:
		dst = append(dst, '"')
		dst = e.TS.UTC().AppendFormat(dst, time.RFC3339)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"user_id":`...)
	dst = strconv.AppendUint(dst, uint64(e.UserID), 10)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, e.Kind)
	dst = append(dst, `,"amount":`...)
	dst = strconv.AppendFloat(dst, e.Amount, 'g', -1, 64)
	dst = append(dst, `,"note":`...)
	if e.Note == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, *e.Note)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string. s must be valid UTF-8.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// TableDDL returns the CREATE TABLE statement of the table generated events
// go to. It works on ClickHouse 18.16 and later.
func TableDDL(db, table string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(ident(db))
	b.WriteByte('.')
	b.WriteString(ident(table))
	b.WriteString(" (")
	for i, c := range Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Type)
	}
	b.WriteString(") ENGINE = MergeTree ORDER BY id")
	return b.String()
}

// ident returns name as is when it is a plain identifier, else quoted in
// backquotes.
func ident(name string) string {
	plain := name != "" && utf8.ValidString(name)
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`").Replace(name) + "`"
}

// AvroSchema is the Avro schema of Event, for Avro tests and demos: ts is
// a timestamp-millis, note a [null, string] union.
const AvroSchema = `{"type": "record", "name": "Event", "fields": [
  {"name": "id", "type": "long"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "user_id", "type": "long"},
  {"name": "kind", "type": "string"},
  {"name": "amount", "type": "double"},
  {"name": "note", "type": ["null", "string"], "default": null}
]}`

// AvroEvent is Event in the shape AvroSchema encodes (hamba/avro tags).
type AvroEvent struct {
	ID     int64     `avro:"id"`
	TS     time.Time `avro:"ts"`
	UserID int64     `avro:"user_id"`
	Kind   string    `avro:"kind"`
	Amount float64   `avro:"amount"`
	Note   *string   `avro:"note"`
}

// Avro returns e as an AvroEvent.
func (e Event) Avro() AvroEvent {
	return AvroEvent{ID: int64(e.ID), TS: e.TS, UserID: int64(e.UserID), Kind: e.Kind, Amount: e.Amount, Note: e.Note}
}
