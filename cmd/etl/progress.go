package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/etl-project/etl/pipeline"
)

// startProgress prints one line a second: rows/s written, rows written,
// consumer lag, in-flight bytes. It returns a function that stops it.
func startProgress(p *pipeline.Pipeline, w io.Writer) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := p.Stats()
		lastAt := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case now := <-t.C:
				s := p.Stats()
				rate := float64(s.RowsWritten-last.RowsWritten) / now.Sub(lastAt).Seconds()
				lag := strconv.FormatInt(s.Lag, 10)
				if s.LagUnknown != "" {
					lag = "?" // unknown: the status line says why
				}
				fmt.Fprintf(w, "\r%10.0f rows/s  %12d rows written  lag %10s  in flight %6.1f MiB  paused %d   ",
					rate, s.RowsWritten, lag, float64(s.InflightBytes)/(1<<20), s.PausedPartitions)
				last, lastAt = s, now
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
