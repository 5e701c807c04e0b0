//go:build !etltest

package main

import "github.com/etl-project/etl/chunk"

// testWrapAck is nil in the production binary: the test hooks exist only
// in the etltest build (testhook_etltest.go).
func testWrapAck() func(next func([]*chunk.Chunk)) func([]*chunk.Chunk) { return nil }
