package avro

import "github.com/etl-project/etl/decode/internal/decodetest"

// The test helpers both decoders share (decode/internal/decodetest).
var (
	schemaOf        = decodetest.SchemaOf
	newChunk        = decodetest.NewChunk
	render          = decodetest.Render
	dump            = decodetest.Dump
	checkConsistent = decodetest.CheckConsistent
	renderNew       = decodetest.RenderNew
)
