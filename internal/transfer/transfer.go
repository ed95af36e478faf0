package transfer

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anepack/anepack/internal/stall"
)

// stateInterval is how often a transfer of several units records its progress; a killed
// process loses at most this much work per unit.
const stateInterval = time.Second

// Source fetches byte ranges of one remote file.
type Source interface {
	// Get asks for bytes [off, end) of the remote file; end < 0 means to its end, and
	// off == 0 with end < 0 asks for the whole file without a Range header. partial reports
	// an answer that honoured the range (206, its Content-Range starting at off); otherwise
	// the body is the whole file from byte 0 (200). Failures worth repeating are *Transient.
	// Closing the body releases the request.
	Get(ctx context.Context, off, end int64) (body io.ReadCloser, partial bool, err error)
}

// Decoder turns a compressed frame back into its n output bytes.
type Decoder interface {
	Decode(comp []byte, n int64, filter byte) ([]byte, error)
	// Release returns a buffer Decode returned, once written.
	Release([]byte)
}

// Transfer is one download. Set the fields, then call Run; a Transfer may be run again (after
// ErrChanged, or after the caller discarded a file whose digest was wrong), and picks up what
// is on disk each time.
type Transfer struct {
	Source Source
	// Path is the part file; StatePath the progress record of a file of several units.
	Path, StatePath string
	// ID names the source and its layout; a state recorded under another ID is ignored.
	ID string
	// Size is the output size; Units cover [0, Size) in order.
	Size  int64
	Units []*Unit
	// Decoder decodes frame units; required when there are any.
	Decoder Decoder
	// NewHashes returns the digests to compute over the output; default one sha256.
	NewHashes func() []hash.Hash
	// Jobs is how many units are fetched at once once ranges are known to work (default 1).
	Jobs int
	// Streams, if set, bounds the requests in flight across transfers sharing it.
	Streams chan struct{}
	// Retries is how many times a failing unit is tried again; Delay is the wait before retry
	// n (0-based) when the server asked for none; Sleep waits (default: a timer).
	Retries int
	Delay   func(n int) time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error
	// Check, if set, is called with the bytes still to download before anything is fetched
	// (a free-space check).
	Check func(need int64) error
	// DiskError wraps a failed write or read of the part file (default: as is).
	DiskError func(error) error
	// Progress receives output bytes written (negative when bytes are written again).
	Progress func(delta int64)
	// Resumed is told the bytes found on disk from an earlier run, when there are any.
	Resumed func(have int64)
	// Logf receives one line per retry and stream switch; Label names the file in them.
	Logf  func(format string, args ...any)
	Label string

	f          *os.File
	wake       chan struct{}
	written    atomic.Int64 // output bytes on disk
	fetched    atomic.Int64 // bytes received by this run
	sequential atomic.Bool  // the server ignores Range: one stream from byte 0
	rangeSeen  atomic.Bool  // a 206 arrived
	gen        atomic.Int64 // changes when hashed bytes are to be written again
	rangeOK    chan struct{}
	rangeOnce  sync.Once
	state      *stateFile
}

// Result is what a finished (or failed) run reports.
type Result struct {
	// Sums are the digests of NewHashes, in order (nil after a failure).
	Sums [][]byte
	// Resumed counts the bytes an earlier run had left; Fetched the bytes received now;
	// Have the output bytes on disk when the run ended.
	Resumed, Fetched, Have int64
}

// Run downloads what is missing and returns the digests. On failure the part file (and the
// state) stay for a later resume.
func (t *Transfer) Run(ctx context.Context) (Result, error) {
	f, err := os.OpenFile(t.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return Result{}, t.diskErr(err)
	}
	t.f = f
	defer f.Close()
	t.fetched.Store(0)
	t.sequential.Store(false)
	t.rangeSeen.Store(false)
	resumed, err := t.load()
	if err != nil {
		return Result{}, err
	}
	defer t.state.close()
	if resumed > 0 && t.Resumed != nil {
		t.Resumed(resumed)
	}
	t.written.Store(resumed)
	t.progress(resumed)
	if t.Check != nil {
		if err := t.Check(t.Size - resumed); err != nil {
			return Result{Have: resumed}, err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.wake = make(chan struct{}, 1)
	hashed := make(chan hashResult, 1)
	go func() { hashed <- t.hash(ctx) }()
	saverStop, saverDone := make(chan struct{}), make(chan struct{})
	go t.saver(saverStop, saverDone)
	err = t.fetchAll(ctx)
	close(saverStop)
	<-saverDone
	res := Result{Resumed: resumed, Fetched: t.fetched.Load(), Have: t.written.Load()}
	if err != nil {
		cancel()
		<-hashed
		t.state.save(t.Units) // keep every byte for the next attempt or process
		return res, err
	}
	h := <-hashed
	if h.err != nil {
		return res, h.err
	}
	if err := f.Sync(); err != nil {
		return res, t.diskErr(err)
	}
	res.Sums = h.sums
	return res, nil
}

// fetchAll fetches every incomplete unit: the first alone until the server has shown that it
// honours Range, then up to Jobs at once.
func (t *Transfer) fetchAll(ctx context.Context) error {
	var todo []*Unit
	for _, u := range t.Units {
		if !u.complete() {
			todo = append(todo, u)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.rangeOK = make(chan struct{})
	t.rangeOnce = sync.Once{}
	queue := make(chan *Unit, len(todo))
	for _, u := range todo[1:] {
		queue <- u
	}
	close(queue)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		firstErr error
	)
	fail := func(err error) { failOnce.Do(func() { firstErr = err; cancel() }) }
	work := func() {
		for u := range queue {
			if ctx.Err() != nil || t.sequential.Load() {
				return
			}
			if err := t.fetchUnit(ctx, u); err != nil {
				fail(err)
				return
			}
		}
	}
	wg.Go(func() {
		if err := t.fetchUnit(ctx, todo[0]); err != nil {
			fail(err)
			return
		}
		t.confirmRange() // the first unit may have been complete after a resume
		work()
	})
	for i := 1; i < min(max(t.Jobs, 1), len(todo)); i++ {
		wg.Go(func() {
			select {
			case <-t.rangeOK:
				work()
			case <-ctx.Done():
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if fr := t.frontier(); fr < t.Size {
		return fmt.Errorf("%s: internal error: bytes from %d were not fetched", t.Label, fr)
	}
	return nil
}

func (t *Transfer) confirmRange() { t.rangeOnce.Do(func() { close(t.rangeOK) }) }

// fetchUnit fetches one unit to its end, retrying transient failures; the failure count
// restarts whenever bytes are written, unless the attempt ended as stalled.
func (t *Transfer) fetchUnit(ctx context.Context, u *Unit) error {
	failures := 0
	// In sequential mode the worker that switched fetches everything.
	for !u.complete() || (t.sequential.Load() && t.frontier() < t.Size) {
		if t.Streams != nil {
			select {
			case t.Streams <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		before := t.written.Load()
		err := t.attempt(ctx, u)
		if t.Streams != nil {
			<-t.Streams
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrRestart) {
			t.logf("%s: %v", t.Label, err)
			t.startOver()
		} else if !transient(err) {
			return err
		}
		if t.written.Load() > before && !errors.Is(err, stall.ErrStalled) {
			failures = 0 // progress; but a trickle that stalled is none, however many bytes it brought
		}
		failures++
		if failures > t.Retries {
			return &GiveUpError{Attempts: failures, Err: err}
		}
		var wait time.Duration
		var tr *Transient
		if errors.As(err, &tr) {
			wait = tr.Wait
		}
		if wait <= 0 && t.Delay != nil {
			wait = t.Delay(failures - 1)
		}
		t.logf("%s: %v at byte %d; retrying in %v (attempt %d of %d)", t.Label, err, u.pos(), wait, failures+1, t.Retries+1)
		if err := t.sleep(ctx, wait); err != nil {
			return err
		}
	}
	return nil
}

// transient reports whether a failed attempt is worth repeating.
func transient(err error) bool {
	var tr *Transient
	return errors.As(err, &tr) || errors.Is(err, stall.ErrStalled) || errors.Is(err, ErrShort) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (t *Transfer) sleep(ctx context.Context, d time.Duration) error {
	if t.Sleep != nil {
		return t.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits d, or until ctx is done (then it returns ctx's error): the wait between two
// attempts, for every retry loop of the downloads and uploads.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Transfer) logf(format string, args ...any) {
	if t.Logf != nil {
		t.Logf(format, args...)
	}
}

func (t *Transfer) progress(delta int64) {
	if t.Progress != nil && delta != 0 {
		t.Progress(delta)
	}
}

func (t *Transfer) diskErr(err error) error {
	if t.DiskError != nil && err != nil {
		return t.DiskError(err)
	}
	return err
}

// multi reports whether the file is preallocated with its progress in a state file.
func (t *Transfer) multi() bool { return len(t.Units) > 1 || (len(t.Units) == 1 && t.Units[0].Frame) }
