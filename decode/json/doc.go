// Package json decodes JSON records into the rows of a chunk.Chunk: New
// compiles a Decoder for the table's columns. Records are parsed with
// fastjson, or by a one-pass path straight into the columns (fast*.go)
// for flat records. Errors are *decode.Error.
package json
