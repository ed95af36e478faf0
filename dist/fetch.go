package dist

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/stall"
	"github.com/anepack/anepack/store"
)

// stateInterval is how often a transfer records its progress for a later resume.
const stateInterval = time.Second

// copyBuf is the size of the buffers bodies are copied through.
const copyBuf = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBuf); return &b }}

// unit is one piece of the output file fetched by one request: a byte range of a plain blob,
// or one zstd frame of a compressed layer.
type unit struct {
	off, n   int64 // where it goes in the output file
	soff, sn int64 // where it comes from in the remote blob
	frame    bool  // a zstd frame to decode (else raw bytes)
	filter   byte  // the frame's filter (frames only)
	// done counts output bytes written: a contiguous prefix for raw units, 0 or n for frames.
	done atomic.Int64
}

func (u *unit) complete() bool { return u.done.Load() >= u.n }

// transfer downloads one blob into a part file in the store's work area, in parallel ranged
// requests, resuming across failures and processes, hashing the output as it is completed.
type transfer struct {
	o     *Options
	src   *source
	part  *store.Part
	size  int64   // output size
	units []*unit // sorted by off, covering [0, size)
	// id identifies what the part holds (the source and the layout); a saved state with
	// another id is discarded.
	id string
	// label names the transfer in progress displays and log lines.
	label string

	f       *os.File
	notify  chan struct{}
	prog    Progress
	written atomic.Int64 // output bytes on disk (for progress)
	fetched atomic.Int64 // bytes received over the network by this run
	dec     *frameDecoder
	rangeOK chan struct{}
	rangeMu sync.Once
	// sequential is set when the server ignores Range: everything comes from one stream.
	sequential atomic.Bool
	// rangeSeen is set once the server has answered a Range request with 206.
	rangeSeen atomic.Bool
	// gen changes when bytes already hashed are to be written again.
	gen atomic.Int64
	// stateFile is the open state file, stateCap its reserved size.
	stateFile *os.File
	stateCap  int
	// hadBytes is set when the part file holds downloaded bytes (for error messages).
	hadBytes bool
}

// result is what a finished transfer reports.
type result struct {
	digest  string
	resumed int64 // bytes already present from an earlier run
	fetched int64 // bytes received by this run
	elapsed time.Duration
}

// plainUnits cuts a blob of size bytes into ranged chunks.
func plainUnits(size, chunk int64) []*unit {
	if chunk <= 0 || size <= chunk {
		return []*unit{{off: 0, n: size, soff: 0, sn: size}}
	}
	var us []*unit
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		us = append(us, &unit{off: off, n: n, soff: off, sn: n})
	}
	return us
}

// run downloads what is missing and returns the sha256 of the output. On failure the part
// and its state stay for a later resume (except after a digest mismatch, which discards
// them).
func (t *transfer) run(ctx context.Context) (result, error) {
	start := time.Now()
	f, err := os.OpenFile(t.part.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return result{}, t.o.Store.DiskError(err)
	}
	t.f = f
	defer f.Close()
	resumed := t.loadState()
	if resumed == 0 {
		if err := f.Truncate(0); err != nil {
			return result{}, t.o.Store.DiskError(err)
		}
	} else {
		t.logf("%s: resuming, %s of %s already here", t.label, cli.FormatBytes(resumed), cli.FormatBytes(t.size))
	}
	if err := t.o.Store.CheckSpace(t.size - resumed); err != nil {
		return result{}, err
	}
	if err := f.Truncate(t.size); err != nil {
		return result{}, t.o.Store.DiskError(err)
	}
	t.openState()
	defer t.closeState()
	t.written.Store(resumed)
	t.prog = t.o.progress(t.label, t.size)
	t.prog.Set(resumed, t.size)
	defer t.prog.Finish()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.notify = make(chan struct{}, 1)
	hashed := make(chan hashResult, 1)
	go func() { hashed <- t.hash(ctx) }()
	saverStop := make(chan struct{})
	saverDone := make(chan struct{})
	go t.saver(saverStop, saverDone)

	err = t.fetchAll(ctx)
	close(saverStop)
	<-saverDone
	if err != nil {
		cancel()
		<-hashed
		t.saveState()
		t.hadBytes = t.written.Load() > 0
		return result{}, err
	}
	h := <-hashed
	if h.err != nil {
		return result{}, h.err
	}
	return result{digest: h.digest, resumed: resumed, fetched: t.fetched.Load(), elapsed: time.Since(start)}, nil
}

// fetchAll fetches every incomplete unit: the first alone until the server has shown that
// it honours Range, then up to Jobs at once.
func (t *transfer) fetchAll(ctx context.Context) error {
	var todo []*unit
	for _, u := range t.units {
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
	queue := make(chan *unit, len(todo))
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
		t.confirmRange()
		work()
	})
	for i := 1; i < min(t.o.jobs(), len(todo)); i++ {
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
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, u := range t.units {
		if !u.complete() {
			return fmt.Errorf("%s: internal error: bytes %d-%d were not fetched", t.label, u.off, u.off+u.n)
		}
	}
	return nil
}

func (t *transfer) confirmRange() { t.rangeMu.Do(func() { close(t.rangeOK) }) }

// fetchUnit fetches one unit to its end, retrying transient failures with backoff; the
// failure count restarts whenever bytes arrive, unless the attempt ended as stalled (too slow).
func (t *transfer) fetchUnit(ctx context.Context, u *unit) error {
	failures := 0
	// In sequential mode the worker that switched fetches everything.
	for !u.complete() || (t.sequential.Load() && t.frontier() < t.size) {
		// Progress is output written: a frame that arrives but does not decode is none.
		before := t.written.Load()
		err := t.attempt(ctx, u)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) {
			return err
		}
		if t.written.Load() > before && !errors.Is(err, errStalled) {
			failures = 0 // progress; but a trickle that stalled is none, however many bytes it brought
		}
		failures++
		if failures > t.o.retries() {
			return fmt.Errorf("%s: giving up after %d attempts: %w", t.label, failures, err)
		}
		d := t.o.delay(failures - 1)
		t.logf("%s: %v at byte %d; retrying in %v (attempt %d of %d)", t.label, err, u.off+u.done.Load(), d, failures+1, t.o.retries()+1)
		if err := t.o.wait(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// attempt makes one request for the rest of u.
func (t *transfer) attempt(ctx context.Context, u *unit) error {
	if t.sequential.Load() {
		return t.sequentialAttempt(ctx)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var body io.ReadCloser
	var partial bool
	var err error
	off, end := u.soff+u.done.Load(), u.soff+u.sn
	if u.frame {
		off = u.soff
	} else if len(t.units) == 1 {
		end = -1 // one stream: an open range (no Range header at all from byte 0)
	}
	wantRange := off > 0 || end >= 0
	body, partial, err = t.src.get(actx, off, end)
	if err != nil {
		return err
	}
	body = t.watch(body, cancel)
	defer body.Close()
	if wantRange && !partial {
		if t.rangeSeen.Load() {
			// Ranges worked a moment ago: a whole-file answer now means the file
			// changed under the If-Range validator.
			return errChanged
		}
		// The server ignores Range (or the file changed since an earlier run):
		// everything comes from this one stream.
		return t.switchSequential(body)
	}
	if partial {
		t.rangeSeen.Store(true)
	}
	if u.frame {
		return t.readFrame(body, u)
	}
	return t.copyRaw(body, u, u.n-u.done.Load())
}

// copyRaw copies up to want bytes of body into u at its current end.
func (t *transfer) copyRaw(body io.Reader, u *unit, want int64) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for want > 0 {
		n, err := io.ReadFull(body, buf[:min(int64(len(buf)), want)])
		if n > 0 {
			pos := u.off + u.done.Load()
			if _, werr := t.f.WriteAt(buf[:n], pos); werr != nil {
				return t.o.Store.DiskError(fmt.Errorf("writing %s: %w", t.part.Path, werr))
			}
			u.done.Add(int64(n))
			want -= int64(n)
			t.fetched.Add(int64(n))
			t.advance(int64(n))
		}
		if err != nil {
			if want > 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
				return errShort
			}
			if want == 0 {
				return nil
			}
			return err
		}
	}
	return nil
}

// readFrame reads one compressed frame from body, decodes it and writes it.
func (t *transfer) readFrame(body io.Reader, u *unit) error {
	comp := make([]byte, u.sn)
	n, err := io.ReadFull(body, comp)
	t.fetched.Add(int64(n))
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return errShort
		}
		return err
	}
	out, err := t.dec.decode(comp, u.n, u.filter)
	if err != nil {
		return &frameError{off: u.soff, err: err}
	}
	defer t.dec.release(out)
	if _, err := t.f.WriteAt(out, u.off); err != nil {
		return t.o.Store.DiskError(fmt.Errorf("writing %s: %w", t.part.Path, err))
	}
	u.done.Store(u.n)
	t.advance(u.n)
	return nil
}

// frameError is a compressed frame that does not decode: corrupt in the registry or on the
// way. It is retried (a transient corruption heals; a stored one fails after the retries).
type frameError struct {
	off int64
	err error
}

func (e *frameError) Error() string {
	return fmt.Sprintf("the compressed frame at byte %d does not decode: %v", e.off, e.err)
}

func (e *frameError) Unwrap() error { return errShort } // retryable, as a cut transfer is

// switchSequential takes the whole blob from one 200 response to the first request: every
// unit is written again, in order, from this stream (bytes from an earlier run may belong to
// an older version of the file), and the other workers stop.
func (t *transfer) switchSequential(body io.Reader) error {
	t.sequential.Store(true)
	t.logf("%s: the server sent the whole file instead of a range; downloading in one stream", t.label)
	for _, u := range t.units {
		u.done.Store(0)
	}
	t.written.Store(0)
	t.gen.Add(1) // the hasher starts over
	t.confirmRange()
	return t.readSequential(body)
}

// sequentialAttempt restarts the one stream from the beginning.
func (t *transfer) sequentialAttempt(ctx context.Context) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _, err := t.src.get(actx, 0, -1)
	if err != nil {
		return err
	}
	body = t.watch(body, cancel)
	defer body.Close()
	return t.readSequential(body)
}

// readSequential reads every unit in order from a stream that starts at byte 0 of the blob.
func (t *transfer) readSequential(body io.Reader) error {
	for _, u := range t.units {
		if u.complete() {
			// Already on disk: skip its bytes in the stream.
			if _, err := io.CopyN(io.Discard, body, u.sn); err != nil {
				return errShort
			}
			continue
		}
		if u.frame {
			if err := t.readFrame(body, u); err != nil {
				return err
			}
			continue
		}
		if d := u.done.Load(); d > 0 {
			if _, err := io.CopyN(io.Discard, body, d); err != nil {
				return errShort
			}
		}
		if err := t.copyRaw(body, u, u.n-u.done.Load()); err != nil {
			return err
		}
	}
	return nil
}

// advance records n more output bytes and wakes the hasher.
func (t *transfer) advance(n int64) {
	t.prog.Set(t.written.Add(n), t.size)
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// frontier is the end of the contiguous completed prefix of the output.
func (t *transfer) frontier() int64 {
	for _, u := range t.units {
		d := u.done.Load()
		if d < u.n {
			if u.frame {
				return u.off
			}
			return u.off + d
		}
	}
	return t.size
}

type hashResult struct {
	digest string
	err    error
}

// hash follows the frontier, hashing the output file as it is completed, so that the digest
// is ready when the last byte arrives.
func (t *transfer) hash(ctx context.Context) hashResult {
	h := sha256.New()
	buf := make([]byte, 4<<20)
	var pos int64
	gen := t.gen.Load()
	for pos < t.size {
		if g := t.gen.Load(); g != gen {
			h.Reset()
			pos, gen = 0, g
		}
		if f := t.frontier(); f > pos {
			n := min(f-pos, int64(len(buf)))
			if _, err := t.f.ReadAt(buf[:n], pos); err != nil {
				return hashResult{err: fmt.Errorf("reading back %s: %w", t.part.Path, err)}
			}
			if t.gen.Load() != gen {
				continue // rewritten meanwhile: start over
			}
			h.Write(buf[:n])
			pos += n
			continue
		}
		select {
		case <-t.notify:
		case <-ctx.Done():
			return hashResult{err: ctx.Err()}
		}
	}
	return hashResult{digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}
}

// watch cancels the request when a window of StallTimeout brings less than MinRate bytes a
// second (nothing at all included); the body then fails with an error wrapping errStalled.
func (t *transfer) watch(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	return &watchedBody{body: body, m: stall.Start(stall.Policy{Window: t.o.stallTimeout(), MinRate: t.o.MinRate}, cancel)}
}

type watchedBody struct {
	body io.ReadCloser
	m    *stall.Meter
}

func (w *watchedBody) Read(p []byte) (int, error) {
	n, err := w.body.Read(p)
	w.m.Add(n)
	if err != nil && err != io.EOF && w.m.Fired() {
		return n, fmt.Errorf("%w: %s", errStalled, w.m.Reason())
	}
	return n, err
}

func (w *watchedBody) Close() error {
	w.m.Stop()
	return w.body.Close()
}

func (t *transfer) logf(format string, args ...any) {
	if t.o.Log != nil {
		fmt.Fprintf(t.o.Log, format+"\n", args...)
	}
}

// errChanged is a file that changed on the server during the download.
var errChanged = errors.New("the file changed on the server during the download")
