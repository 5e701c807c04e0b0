package pipeline

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// describerUnder runs a describer whose read is read, in a synctest
// bubble, until the test's end.
func describerUnder(t *testing.T, every time.Duration, adds bool, read func(ctx context.Context, d *describer) error) *describer {
	t.Helper()
	var d *describer
	d = newDescriber(every, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(ctx context.Context) error { return read(ctx, d) }, func() bool { return adds })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return d
}

// TestDescriberSchemaSeen: the first sight of a schema id asks for one
// read, which takes the id's pending columns; the id is seen once that
// read has finished, and a second id seen meanwhile shares or follows it.
func TestDescriberSchemaSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var reads int
		var took [][]int32
		release := make(chan struct{})
		d := describerUnder(t, 0, true, func(ctx context.Context, d *describer) error {
			mu.Lock()
			reads++
			took = append(took, d.takePending())
			mu.Unlock()
			<-release
			return nil
		})
		if d.schemaSeen(7) {
			t.Fatal("schema 7 seen before any read")
		}
		ch := d.schemaDescribed(7)
		if ch == nil {
			t.Fatal("no read to wait for after schema 7 was first served")
		}
		synctest.Wait() // the read has started and holds
		select {
		case <-ch:
			t.Fatal("schema 7 described while its read runs")
		default:
		}
		if d.schemaSeen(7) {
			t.Fatal("schema 7 seen while its read runs")
		}
		close(release)
		synctest.Wait()
		select {
		case <-ch:
		default:
			t.Fatal("schema 7 not described once its read finished")
		}
		if !d.schemaSeen(7) || d.schemaDescribed(7) != nil {
			t.Error("schema 7 not seen once its read finished")
		}
		if d.schemaDescribed(8) != nil {
			t.Error("schema 8, never served, has a read to wait for")
		}
		if d.schemaSeen(8) {
			t.Error("schema 8 seen before a read started after it")
		}
		synctest.Wait()
		if !d.schemaSeen(8) {
			t.Error("schema 8 not seen after its read")
		}
		mu.Lock()
		defer mu.Unlock()
		if reads != 2 || !slices.Equal(took[0], []int32{7}) || !slices.Equal(took[1], []int32{8}) {
			t.Errorf("reads %d taking %v, want 2 taking [[7] [8]]", reads, took)
		}
	})
}

// TestDescriberRetriesRequested: a requested read that fails is tried
// again each second until it succeeds, and only then does its channel
// close; a periodic read that fails waits for the next tick.
func TestDescriberRetriesRequested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		fail := 2
		d := describerUnder(t, time.Hour, false, func(ctx context.Context, d *describer) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			if fail > 0 {
				fail--
				return errors.New("refused")
			}
			return nil
		})
		done := d.request()
		<-done
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the requested read finished after %v, want 2s (two failed tries a second apart, then one that succeeds)", got)
		}
		mu.Lock()
		fail = 1
		mu.Unlock()
		time.Sleep(2*time.Hour - 2*time.Second + time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{0, time.Second, 2 * time.Second, time.Hour, 2 * time.Hour}
		if !slices.Equal(at, want) {
			t.Errorf("reads at %v, want %v", at, want)
		}
	})
}

// TestDescriberOneReadAtATime: a read asked for through reading (a
// shard's Refresh) waits for the describer's read that runs, the
// describer's next read waits for it in turn, and a caller whose context
// ends while it waits gives up with the context's error.
func TestDescriberOneReadAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		release := make(chan struct{})
		d := describerUnder(t, 0, false, func(ctx context.Context, d *describer) error {
			mu.Lock()
			order = append(order, "describer")
			mu.Unlock()
			<-release
			return nil
		})
		first := d.request()
		synctest.Wait() // the describer's read runs and holds

		shardDone := make(chan error, 1)
		shardRelease := make(chan struct{})
		go func() {
			shardDone <- d.reading(t.Context(), func() error {
				mu.Lock()
				order = append(order, "shard")
				mu.Unlock()
				<-shardRelease
				return nil
			})
		}()
		ctx, cancel := context.WithCancel(t.Context())
		gaveUp := make(chan error, 1)
		go func() {
			gaveUp <- d.reading(ctx, func() error {
				t.Error("a read ran after its context ended")
				return nil
			})
		}()
		synctest.Wait()
		mu.Lock()
		if !slices.Equal(order, []string{"describer"}) {
			t.Errorf("reads begun while the describer's runs: %v, want [describer]", order)
		}
		mu.Unlock()
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("reading with an ended context = %v, want context.Canceled", err)
		}

		close(release)
		<-first
		synctest.Wait() // the shard's read runs and holds
		second := d.request()
		synctest.Wait()
		mu.Lock()
		if !slices.Equal(order, []string{"describer", "shard"}) {
			t.Errorf("reads begun while the shard's runs: %v, want [describer shard]", order)
		}
		mu.Unlock()
		close(shardRelease)
		if err := <-shardDone; err != nil {
			t.Errorf("shard's read: %v", err)
		}
		<-second
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(order, []string{"describer", "shard", "describer"}) {
			t.Errorf("reads %v, want [describer shard describer]", order)
		}
	})
}
