package clickhouse

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/etl-project/etl/chunk"
)

// pick returns the replica the next attempt goes to: the current one, or
// the next in order whose breaker lets inserts through; nil when every
// breaker is open.
func (s *Shard) pick() *replica {
	n := len(s.replicas)
	start := int(s.cur.Load())
	for i := range n {
		k := (start + i) % n
		if s.replicas[k].br.allow() {
			if i > 0 {
				s.cur.Store(int64(k))
			}
			return s.replicas[k]
		}
	}
	return nil
}

// reopens is how long until the first open breaker lets inserts through,
// and its replica.
func (s *Shard) reopens() (time.Duration, *replica) {
	var first time.Time
	var next *replica
	for _, r := range s.replicas {
		if u := r.br.until(); !u.IsZero() && (first.IsZero() || u.Before(first)) {
			first, next = u, r
		}
	}
	return max(first.Sub(s.clock.Now()), time.Millisecond), next
}

// moveOn makes the replica after r the current one.
func (s *Shard) moveOn(r *replica) {
	for i, x := range s.replicas {
		if x == r {
			s.cur.CompareAndSwap(int64(i), int64((i+1)%len(s.replicas)))
			return
		}
	}
}

// insert inserts b and acknowledges it. It returns nil, ctx.Err() when ctx
// ends, or the *InsertError that ends the shard. A batch the server
// refuses for the values of some rows is bisected down to the records
// behind them when OnRejected is set (bisect.go).
func (s *Shard) insert(ctx context.Context, b *batch) error {
	start := s.clock.Now()
	err := s.attempt(ctx, b.chunks, b.rows, b.bytes)
	if err == nil {
		if s.log.Enabled(ctx, slog.LevelDebug) {
			s.log.Debug("batch inserted", slog.Int("rows", b.rows), slog.Int("bytes", b.bytes),
				slog.Int("chunks", len(b.chunks)), slog.String("reason", b.reason), slog.Duration("took", s.clock.Now().Sub(start)))
		}
		s.noteDefaulted(s.targetFor(b.chunks[0].Schema), b.chunks, b.rows)
		s.ack(b.chunks)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	permanent := Permanent(err)
	if permanent && s.o.OnRejected != nil && RowRejected(err) {
		s.log.Warn("insert refused for the values of some rows: bisecting the batch to find their records",
			slog.Int("rows", b.rows), slog.Int("chunks", len(b.chunks)), slog.Any("error", err))
		berr := s.bisect(ctx, b, err)
		if berr == nil {
			s.ack(b.chunks)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = berr
	}
	var ie *InsertError
	if !errors.As(err, &ie) {
		ie = &InsertError{Table: s.targetFor(b.chunks[0].Schema).Name(), Err: err}
	}
	s.fail()
	if permanent {
		s.m.permanent.Inc()
		s.log.Error("insert failed permanently", slog.Int("attempt", ie.Attempts),
			slog.Int("rows", b.rows), slog.Int("chunks", len(b.chunks)), slog.Any("error", ie))
	} else {
		s.log.Error("insert failed, attempts exhausted", slog.Int("attempt", ie.Attempts),
			slog.Int("rows", b.rows), slog.Int("chunks", len(b.chunks)), slog.Any("error", ie))
	}
	return ie
}

// attempt inserts chunks (rows rows, bytes bytes): it is the retry
// policy. Transient errors are retried on the next healthy replica at once
// and, once every replica has failed them, after a backoff; what a failed
// attempt means (the table changed, the data does not fit, the replica or
// network failed) is recoverable's decision. It returns nil, ctx.Err()
// when ctx ends, or the *InsertError of a permanent failure or of
// MaxAttempts transient ones. While every replica's breaker is open it
// probes the replica whose breaker reopens first, at the retry backoff
// (the breakers steer inserts away from a failing replica while another
// one takes them; they do not hold a shard that is down for longer than
// its retries would): the queue fills meanwhile and the producers see
// backpressure.
func (s *Shard) attempt(ctx context.Context, chunks []*chunk.Chunk, rows, bytes int) error {
	if s.o.ReportOrphans && !s.checkFirst(ctx) {
		return ctx.Err()
	}
	b := &batchSend{chunks: chunks, rows: rows, bytes: bytes}
	var unknownOn *replica // the last replica where the insert's status was left unknown
	tried := 0             // replicas that failed this batch since the last backoff
	waitedOpen := false
	backedOff := false // the last failure was followed by the retry backoff
	for attempt := 1; ; attempt++ {
		r := s.pick()
		if r == nil {
			if !s.waitOpen(ctx, attempt, backedOff, &waitedOpen, rows) {
				return ctx.Err()
			}
			attempt--
			backedOff = false
			continue
		}
		backedOff = false
		target, err := s.send(ctx, r, b)
		if err == nil {
			if attempt > 1 {
				s.log.Info("insert succeeded after retries", slog.Int("attempt", attempt), slog.String("replica", r.name), slog.Int("rows", rows))
			}
			if unknownOn != nil && s.o.ReportOrphans {
				s.reportOrphans(ctx, s.lister(unknownOn), unknownOn.name, "after an insert whose status was unknown")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ie *InsertError
		if !errors.As(err, &ie) {
			ie = &InsertError{Table: target.Name(), Err: err}
		}
		switch s.recoverable(ctx, b, target, err, ie) {
		case recoverAgain:
			continue
		case recoverNever:
			ie.Attempts = attempt
			return ie
		}
		s.m.transient.Inc()
		r.errs.Inc()
		if r.br.failure() {
			s.log.Warn("replica circuit breaker opened", slog.String("replica", r.name), slog.Duration("open_for", r.br.o.OpenFor), slog.Any("error", err))
		}
		s.moveOn(r)
		if s.o.MaxAttempts > 0 && attempt >= s.o.MaxAttempts {
			ie.Attempts = attempt
			return ie
		}
		s.m.retries.Inc()
		if unknownStatus(err) {
			s.m.unknownStatus.Inc()
			unknownOn = r
		}
		tried++
		if tried < len(s.replicas) {
			s.log.Warn("insert failed, retrying on the next replica", slog.Int("attempt", attempt),
				slog.String("replica", r.name), slog.Int("rows", rows), slog.Any("error", err))
			continue
		}
		tried = 0
		wait := s.backoff(attempt)
		s.log.Warn("insert failed, retrying", slog.Int("attempt", attempt), slog.Duration("backoff", wait),
			slog.String("replica", r.name), slog.Int("rows", rows), slog.Any("error", err))
		if !s.sleep(ctx, wait) {
			return ctx.Err()
		}
		backedOff = true
	}
}

// waitOpen waits, while every replica's breaker is open, until the first
// breaker reopens or the retry backoff of attempt has passed (at once when
// the last failure was followed by that backoff already), then lets the
// replica whose breaker reopens first take a probe. It logs once per batch
// (*warned) and reports false when ctx ended.
func (s *Shard) waitOpen(ctx context.Context, attempt int, backedOff bool, warned *bool, rows int) bool {
	reopen, next := s.reopens()
	wait := min(reopen, s.backoff(attempt))
	if backedOff {
		wait = 0 // this attempt's backoff has passed already
	}
	if !*warned {
		s.log.Warn("every replica's circuit breaker is open: probing at the retry backoff", slog.Duration("breaker_reopens", reopen), slog.Int("rows", rows))
		*warned = true
	}
	if wait > 0 && !s.sleep(ctx, wait) {
		return false
	}
	if next != nil && s.pick() == nil {
		next.br.probe()
	}
	return true
}

// batchSend is one batch across its attempts: its chunks (which a
// conversion to the table's new types replaces), their size, and the
// recoveries already tried, each at most once per batch.
type batchSend struct {
	chunks      []*chunk.Chunk
	rows, bytes int
	reprojected bool // the target was re-projected after a missing column
	retyped     bool // the batch was converted to the table's new column types
}

// send makes one attempt of b on replica r, counting the insert's encoded
// copy in the budget while it runs, and records its duration, the
// replica's breaker success and the inserted rows and bytes. It returns
// the target the batch was inserted for.
func (s *Shard) send(ctx context.Context, r *replica, b *batchSend) (*Target, error) {
	start := s.clock.Now()
	// The insert's encoded copy of the batch is in flight while it
	// runs: the whole batch, or a piece when it goes in pieces.
	encoded := int64(r.c.EncodedCopy(b.rows, b.bytes))
	if s.o.Budget != nil {
		s.o.Budget.Add(encoded)
	}
	target := s.targetFor(b.chunks[0].Schema)
	err := r.c.Insert(withHeld(ctx, s.o.Budget), target, b.chunks)
	if s.o.Budget != nil {
		s.o.Budget.Release(encoded)
	}
	elapsed := s.clock.Now().Sub(start).Seconds()
	switch {
	case err == nil:
		r.durOK.Observe(elapsed)
		r.br.success()
		s.m.records.Add(float64(b.rows))
		s.m.bytes.Add(float64(b.bytes))
	case ctx.Err() == nil:
		r.durErr.Observe(elapsed)
	}
	return target, err
}

// recovery is recoverable's decision on a failed attempt.
type recovery int

const (
	// recoverRetry: the error is transient; the retry policy decides
	// where and when the batch goes next.
	recoverRetry recovery = iota
	// recoverAgain: the batch was made to fit the table as it is now
	// (the target re-projected, or the batch converted to the new column
	// types): the next attempt goes at once, and the failure says nothing
	// about the replica.
	recoverAgain
	// recoverNever: no replica would take the batch; ie is the error.
	recoverNever
)

// recoverable decides what the failed attempt of b for target (err, and
// ie, the *InsertError returned for it) means. A refusal that the table's
// change explains is followed by followTable (the batch re-projected or
// converted, or ie saying why it cannot be); another permanent error means
// the data does not fit the table, and says nothing about the replica's
// health; anything else is transient.
func (s *Shard) recoverable(ctx context.Context, b *batchSend, target *Target, err error, ie *InsertError) recovery {
	if rec, ok := s.followTable(ctx, b, target, err, ie); ok {
		return rec
	}
	if Permanent(err) {
		return recoverNever
	}
	return recoverRetry
}

// sleep waits d on the shard's clock or until ctx ends; it reports
// whether d passed.
func (s *Shard) sleep(ctx context.Context, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// backoff is the wait after the attempt-th failure: full jitter over the
// capped exponential InitialBackoff*2^(attempt-1).
func (s *Shard) backoff(attempt int) time.Duration {
	d := s.o.InitialBackoff
	for i := 1; i < attempt && d < s.o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, s.o.MaxBackoff)
	return s.o.Jitter(d)
}

func (s *Shard) ack(chunks []*chunk.Chunk) {
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	if !s.failed && s.o.OnDone != nil {
		s.o.OnDone(chunks)
	}
}

func (s *Shard) fail() {
	s.ackMu.Lock()
	s.failed = true
	s.ackMu.Unlock()
}

// heldKey is the context key of the budget an insert counts its encoders'
// working memory in.
type heldKey struct{}

// withHeld returns ctx carrying b (nil: nothing is counted).
func withHeld(ctx context.Context, b Budget) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, heldKey{}, b)
}

// heldCount is what an insert counts in the budget of its context.
type heldCount struct {
	b Budget
	n int64
}

// heldCounter returns the count of the budget ctx carries (none: a
// count that counts nothing).
func heldCounter(ctx context.Context) *heldCount {
	b, _ := ctx.Value(heldKey{}).(Budget)
	return &heldCount{b: b}
}

// set makes the count n bytes, adding or releasing the difference.
func (h *heldCount) set(n int) {
	if h.b == nil {
		return
	}
	switch d := int64(n) - h.n; {
	case d > 0:
		h.b.Add(d)
	case d < 0:
		h.b.Release(-d)
	}
	h.n = int64(n)
}
