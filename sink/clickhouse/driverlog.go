package clickhouse

import (
	"context"
	"log/slog"
)

// driverLog is the logger handed to clickhouse-go. The driver warns on
// every connection to a server older than the versions it is tested with
// ("unsupported clickhouse version"); the sink supports those servers on
// its own insert path and logs the server's version once when it connects,
// so that line is demoted to DEBUG. Everything else passes through.
func driverLog(log *slog.Logger) *slog.Logger {
	return slog.New(demote{log.Handler()}).With(slog.String("component", "clickhouse-go"))
}

type demote struct{ h slog.Handler }

func (d demote) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "unsupported clickhouse version" && r.Level > slog.LevelDebug {
		if !d.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return d.h.Handle(ctx, r)
}

func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{d.h.WithAttrs(as)} }
func (d demote) WithGroup(name string) slog.Handler    { return demote{d.h.WithGroup(name)} }
