package gen

import (
	"encoding/binary"
	"strconv"
	"time"
)

// The nested-Avro data set (make bench WORKLOAD=nested-avro): each record
// is a batch of BatchEvents events from one user, in Avro with the
// NestedSchema, Confluent-framed. The benchmark's pipeline
// (configs/bench-nested-avro.yaml) flattens the events, keeps those that
// NestedKeep accepts, derives three fields and writes the NestedDDL table
// (LowCardinality, Nullable and Array columns). Batch n of a seed is a pure
// function of (seed, n), as Make is for events.

// BatchEvents is the number of events in a batch.
const BatchEvents = 100

// NestedSchema is the Avro schema of a batch.
const NestedSchema = `{"type":"record","name":"Batch","namespace":"etl.bench","fields":[` +
	`{"name":"batch_id","type":"long"},` +
	`{"name":"source","type":"string"},` +
	`{"name":"user","type":"string"},` +
	`{"name":"sent_at","type":{"type":"long","logicalType":"timestamp-millis"}},` +
	`{"name":"events","type":{"type":"array","items":{"type":"record","name":"Event","fields":[` +
	`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
	`{"name":"kind","type":"string"},` +
	`{"name":"value","type":"long"},` +
	`{"name":"page","type":["null","string"],"default":null},` +
	`{"name":"tags","type":{"type":"array","items":"string"}}` +
	`]}}}]}`

// NestedDDL returns the CREATE TABLE statement of the benchmark's table:
// the batch's fields, each event's, and the three the chain derives
// (amount, bucket, key). LowCardinality needs
// allow_experimental_low_cardinality_type = 1 on ClickHouse 18.x.
func NestedDDL(db, table string) string {
	return "CREATE TABLE IF NOT EXISTS " + db + "." + table + " (" +
		"batch_id UInt64, source LowCardinality(String), user String, " +
		"ts DateTime, kind LowCardinality(String), value Int64, page Nullable(String), tags Array(String), " +
		"amount Int64, bucket Int32, key String" +
		") ENGINE = MergeTree ORDER BY (kind, ts)"
}

// Batch is one generated record of the nested data set.
type Batch struct {
	ID     uint64
	Source string
	User   string
	SentAt time.Time // whole milliseconds
	Events []NestedEvent
}

// NestedEvent is one event of a Batch.
type NestedEvent struct {
	TS    time.Time // whole milliseconds, within the hour before SentAt
	Kind  string
	Value int64
	Page  *string // nil for every 4th event
	Tags  []string
}

// NestedKinds are the words NestedEvent.Kind is drawn from; the
// benchmark's chain drops "debug".
var NestedKinds = [8]string{"view", "click", "purchase", "debug", "scroll", "login", "share", "search"}

var nestedSources = [4]string{"web", "ios", "android", "api"}
var nestedTags = [6]string{"a", "beta", "mobile", "promo", "returning", "new"}
var nestedPages = [5]string{"/", "/cart", "/checkout", "/search?q=shoes", "/product/1234567"}

// NestedKeep reports whether the benchmark's chain keeps event e (filters
// "events.value % 10 != 0" and "events.kind != 'debug'").
func NestedKeep(e NestedEvent) bool { return e.Value%10 != 0 && e.Kind != "debug" }

// MakeBatch returns batch n of the data set with the given seed.
func MakeBatch(seed int64, n uint64) Batch {
	st := newStream(seed^0x6e65737465640000, n)
	b := Batch{
		ID:     n,
		Source: nestedSources[st.next()%uint64(len(nestedSources))],
		User:   "user-" + strconv.FormatUint(st.next()%100000, 10),
		SentAt: Epoch.Add(time.Duration(st.next()%(365*24*3600*1000)) * time.Millisecond),
		Events: make([]NestedEvent, BatchEvents),
	}
	for i := range b.Events {
		e := &b.Events[i]
		e.TS = b.SentAt.Add(-time.Duration(st.next()%(3600*1000)) * time.Millisecond)
		e.Kind = NestedKinds[st.next()%uint64(len(NestedKinds))]
		e.Value = int64(st.next()%2000000) - 1000
		if i%4 != 3 {
			p := nestedPages[st.next()%uint64(len(nestedPages))]
			e.Page = &p
		}
		nt := st.next() % 4
		for j := uint64(0); j < nt; j++ {
			e.Tags = append(e.Tags, nestedTags[st.next()%uint64(len(nestedTags))])
		}
	}
	return b
}

// KeptRows returns how many rows the benchmark's chain writes for batches
// start, ..., start+count-1 of seed.
func KeptRows(seed int64, start, count uint64) uint64 {
	var n uint64
	for i := start; i < start+count; i++ {
		for _, e := range MakeBatch(seed, i).Events {
			if NestedKeep(e) {
				n++
			}
		}
	}
	return n
}

// AppendConfluent appends the Confluent wire format's header: the magic
// byte 0 and the schema id, big-endian. The Avro body follows it.
func AppendConfluent(dst []byte, schemaID int32) []byte {
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(schemaID))
}

// AppendAvro appends b in Avro's binary encoding of NestedSchema.
func (b Batch) AppendAvro(dst []byte) []byte {
	dst = binary.AppendVarint(dst, int64(b.ID))
	dst = appendAvroString(dst, b.Source)
	dst = appendAvroString(dst, b.User)
	dst = binary.AppendVarint(dst, b.SentAt.UnixMilli())
	if len(b.Events) > 0 {
		dst = binary.AppendVarint(dst, int64(len(b.Events)))
		for _, e := range b.Events {
			dst = binary.AppendVarint(dst, e.TS.UnixMilli())
			dst = appendAvroString(dst, e.Kind)
			dst = binary.AppendVarint(dst, e.Value)
			if e.Page == nil {
				dst = binary.AppendVarint(dst, 0) // union branch 0: null
			} else {
				dst = binary.AppendVarint(dst, 1)
				dst = appendAvroString(dst, *e.Page)
			}
			if len(e.Tags) > 0 {
				dst = binary.AppendVarint(dst, int64(len(e.Tags)))
				for _, t := range e.Tags {
					dst = appendAvroString(dst, t)
				}
			}
			dst = append(dst, 0) // end of the tags
		}
	}
	return append(dst, 0) // end of the events
}

// appendAvroString appends s as Avro's string: its length (zigzag varint)
// and its bytes.
func appendAvroString(dst []byte, s string) []byte {
	dst = binary.AppendVarint(dst, int64(len(s)))
	return append(dst, s...)
}
