package testenv

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// Logger returns a logger for code under test: WARN and above go to t's
// log, shown with a failing test; with go test -v every level from DEBUG
// goes to stderr as it happens.
//
// Like t.Log, it must not be used after t has finished: stop the goroutines
// that log before the test returns.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// LogWriter returns a writer that hands each write to t.Log, without its
// trailing newline: one log line of a text handler per t.Log.
func LogWriter(t testing.TB) io.Writer { return logWriter{t} }

type logWriter struct{ t testing.TB }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
