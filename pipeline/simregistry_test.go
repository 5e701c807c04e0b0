package pipeline

import (
	"slices"
	"testing/synctest"
	"unsafe"

	"github.com/etl-project/etl/chunk"
	"github.com/etl-project/etl/decode"
	"github.com/etl-project/etl/decode/avro"
)

// Registry waits under the simulation: in a quarter of the seeds some
// records name a schema the registry has not served yet, as a new Avro
// writer schema id does. The decoder answers such a record with
// avro.SchemaPendingError, as the Avro decoder does; the lane hands over
// what it decoded and waits (waitSchema) until the simulation serves the
// schema, then runs again. Several lanes may wait for one schema. Every
// invariant holds meanwhile, and at quiesce every record is in every table.

// simSchemas is the fake registry: the schema each waiting record names,
// and whether it was served.
type simSchemas struct {
	of     map[*byte]int         // a record value's first byte → its schema
	wait   map[int]chan struct{} // closed once served
	served map[int]bool
	last   int
}

func newSimSchemas() *simSchemas {
	return &simSchemas{of: map[*byte]int{}, wait: map[int]chan struct{}{}, served: map[int]bool{}}
}

// name marks the value of a produced record as naming a schema: a new one,
// or the last one if it is not served yet.
func (g *simSchemas) name(w *simWorld, v []byte) {
	if len(v) == 0 || w.rng.Intn(10) != 0 {
		return
	}
	id := g.last
	if id == 0 || g.served[id] || w.rng.Intn(2) == 0 {
		g.last++
		id = g.last
		g.wait[id] = make(chan struct{})
	}
	g.of[unsafe.SliceData(v)] = id
}

// simRegistryDecoder answers a record whose schema was not served with
// SchemaPendingError, and decodes the others.
type simRegistryDecoder struct {
	decode.Decoder
	g *simSchemas
}

func (d simRegistryDecoder) Decode(value []byte, c *chunk.Chunk) (int, error) {
	if len(value) > 0 {
		if id, ok := d.g.of[unsafe.SliceData(value)]; ok && !d.g.served[id] {
			simTotals.schemaWaits++
			return 0, &avro.SchemaPendingError{ID: int32(id), Wait: d.g.wait[id]}
		}
	}
	return d.Decoder.Decode(value, c)
}

// registryStep serves a schema some record names (all of them once calm),
// then lets the lanes waiting for it be scheduled.
func (w *simWorld) registryStep() {
	g := w.registry
	var ids []int
	for id := range g.wait {
		if !g.served[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	if !w.calm {
		ids = ids[w.rng.Intn(len(ids)):][:1]
	}
	for _, id := range ids {
		g.served[id] = true
		close(g.wait[id])
		w.tracef("registry serves schema %d", id)
	}
	synctest.Wait() // the lanes' waits end: they are scheduled
}

// bindRegistry binds the pipeline's decoder with the fake registry in front
// (nil when the seed has none).
func (w *simWorld) bindRegistry() *boundDecoder {
	if w.registry == nil {
		return nil
	}
	d, err := w.p.bind(nil)
	if err != nil {
		return nil // runLane reports it
	}
	d.Decoder = simRegistryDecoder{Decoder: d.Decoder, g: w.registry}
	return d
}
