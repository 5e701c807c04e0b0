// Package avro decodes Avro binary datums into the rows of a chunk.Chunk:
// New compiles a Decoder for one writer schema (resolved against an
// optional reader schema) and the table's columns; NewFramed wraps it for
// the framings a Kafka topic uses (raw, Confluent schema registry, single
// object). Schemas are parsed with hamba/avro (imported as havro); datums
// are read by this package's own reader. Errors are *decode.Error.
package avro
