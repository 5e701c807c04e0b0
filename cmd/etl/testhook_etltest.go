//go:build etltest

package main

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/etl-project/etl/chunk"
)

// testWrapAck is built only with the etltest tag (the e2e tests build the
// binary so): ETL_TEST_CRASH_AFTER_INSERTS=n kills the process with
// SIGKILL after n acknowledged inserts, before their acknowledgement is
// processed: the instant between an insert and its commit, for the
// exactly-once tests. The production binary has no such hook.
func testWrapAck() func(next func([]*chunk.Chunk)) func([]*chunk.Chunk) {
	n, _ := strconv.ParseInt(os.Getenv("ETL_TEST_CRASH_AFTER_INSERTS"), 10, 64)
	if n <= 0 {
		return nil
	}
	return func(next func([]*chunk.Chunk)) func([]*chunk.Chunk) {
		var count atomic.Int64
		return func(cs []*chunk.Chunk) {
			if count.Add(1) >= n {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			next(cs)
		}
	}
}
