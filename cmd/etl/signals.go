package main

import (
	"log/slog"
	"os"
	"time"
)

// signalRepeat is how soon after the first stop signal another one counts
// as the same: GNU timeout, and some supervisors, deliver one SIGTERM
// twice (to the process and to its group), within milliseconds.
const signalRepeat = time.Second

// watchSignals turns the signals on sigs into a stop: the first one calls
// stop (a graceful stop, the drain); another one within signalRepeat of
// it is the same signal delivered twice and is only logged; one that
// comes later calls exit(exitInterrupted), the immediate exit. It returns
// when sigs is closed or exit returns.
func watchSignals(sigs <-chan os.Signal, stop func(), exit func(int), log *slog.Logger, now func() time.Time) {
	s, ok := <-sigs
	if !ok {
		return
	}
	first := now()
	log.Info("signal received: stopping", "signal", s.String())
	stop()
	for s := range sigs {
		if since := now().Sub(first); since < signalRepeat {
			log.Info("signal repeated within a second of the first: counted as the same stop (send it again later to exit at once)",
				"signal", s.String(), "after", since.Round(time.Millisecond))
			continue
		}
		log.Warn("second signal: exiting now; records not committed will be read again", "signal", s.String())
		exit(exitInterrupted)
		return
	}
}
