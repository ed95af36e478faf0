package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// stateSaveInterval is how often the chunk progress of a parallel download
// is written to <blob>.part.json; a killed process loses at most this much
// work per chunk.
const stateSaveInterval = time.Second

// copyBufSize is the read/write unit of a stream (one per stream, pooled).
const copyBufSize = 256 << 10

// bufs is a free list of copy buffers. Unlike a sync.Pool it keeps them
// across garbage collections, so a long download allocates one buffer per
// concurrent stream once instead of a steady stream of garbage, and its
// memory stays flat however large the file.
var bufs = make(chan []byte, 64)

func getBuf() []byte {
	select {
	case b := <-bufs:
		return b
	default:
		return make([]byte, copyBufSize)
	}
}

func putBuf(b []byte) {
	select {
	case bufs <- b:
	default:
	}
}

// source is where a file's bytes come from. A signed CDN URL can expire
// during a long download; refresh asks the Hub for a new one.
type source struct {
	mu      sync.Mutex
	u       *url.URL
	refresh func(ctx context.Context) (*url.URL, error)
}

func (s *source) get() *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u
}

func (s *source) renew(ctx context.Context) error {
	u, err := s.refresh(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.u = u
	s.mu.Unlock()
	return nil
}

// chunk is a byte range [start, end) of the file; done bytes from start are
// on disk.
type chunk struct {
	start, end int64
	done       atomic.Int64
}

func (ch *chunk) pos() int64     { return ch.start + ch.done.Load() }
func (ch *chunk) complete() bool { return ch.done.Load() >= ch.end-ch.start }

// transfer downloads one file into its .part file and hashes it.
type transfer struct {
	c         *Client
	base      context.Context // the download's context, outliving each run
	what      reqDesc
	size      int64
	gitBlob   bool // also compute the git blob SHA-1
	part      string
	statePath string
	src       *source
	prog      *tracker

	f        *os.File
	chunks   []*chunk
	multi    bool // ranged parallel chunks, progress in statePath
	noRanges bool // the server answered 200 to a Range request
	wake     chan struct{}

	rangeOK   chan struct{} // closed at the first 206 of a parallel run
	rangeOnce sync.Once
	saveMu    sync.Mutex
}

// restartError asks run to start the file over from byte 0, using pending
// (a 200 answer carrying the whole file) if there is one.
type restartError struct {
	reason   string
	pending  *http.Response
	noRanges bool
}

func (e *restartError) Error() string { return e.reason }

// retryError is a transient failure; wait, when set, is what the server asked.
type retryError struct {
	err  error
	wait time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// errExpired: the CDN refused a (probably expired) signed URL.
var errExpired = errors.New("the download URL was refused (expired signature?)")

// hashes are the digests of a completed download.
type hashes struct{ sha256, gitSHA1 string }

// run downloads the whole file into t.part (resuming what is there) and
// returns its digests. The file is complete and synced when it returns nil.
func (t *transfer) run(ctx context.Context) (hashes, error) {
	t.base = ctx
	f, err := os.OpenFile(t.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return hashes{}, diskErr(err, t.part)
	}
	t.f = f
	defer f.Close()
	if err := t.plan(); err != nil {
		return hashes{}, err
	}
	var pending *http.Response
	for restarts := 0; ; restarts++ {
		sums, err := t.runOnce(ctx, pending)
		var rs *restartError
		if !errors.As(err, &rs) {
			if err == nil {
				if serr := f.Sync(); serr != nil {
					return hashes{}, diskErr(serr, t.part)
				}
			}
			return sums, err
		}
		if restarts >= t.c.Backoff.Retries+1 {
			if rs.pending != nil {
				rs.pending.Body.Close()
			}
			return hashes{}, &Error{Kind: ErrNetwork, Repo: t.what.repo, File: t.what.file,
				Msg: fmt.Sprintf("download of %s in %s kept starting over (%s)", t.what.file, t.what.repo, rs.reason)}
		}
		t.c.logf("%s: %s; starting the file over from byte 0", t.what.file, rs.reason)
		t.noRanges = t.noRanges || rs.noRanges
		if err := t.reset(); err != nil {
			if rs.pending != nil {
				rs.pending.Body.Close()
			}
			return hashes{}, err
		}
		pending = rs.pending
	}
}

func (t *transfer) doneBytes() int64 {
	var n int64
	for _, ch := range t.chunks {
		n += ch.done.Load()
	}
	return n
}

// frontier is the end of the contiguous prefix on disk: the hasher may read
// up to here.
func (t *transfer) frontier() int64 {
	for _, ch := range t.chunks {
		if !ch.complete() {
			return ch.pos()
		}
	}
	return t.size
}

func (t *transfer) notify() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// runOnce fetches every incomplete chunk while a hasher follows the
// contiguous prefix; it returns the digests once everything is on disk.
func (t *transfer) runOnce(ctx context.Context, pending *http.Response) (hashes, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.wake = make(chan struct{}, 1)
	h := newHasher(t.f, t.size, t.gitBlob, t.frontier, t.wake)
	hashDone := make(chan error, 1)
	go func() { hashDone <- h.run(ctx) }()

	stopSaver := make(chan struct{})
	var saverWG sync.WaitGroup
	if t.multi {
		saverWG.Go(func() {
			tick := time.NewTicker(stateSaveInterval)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					t.saveState()
				case <-stopSaver:
					return
				}
			}
		})
	}
	err := t.fetchAll(ctx, pending)
	close(stopSaver)
	saverWG.Wait()
	if err != nil {
		cancel()
		<-hashDone
		if t.multi {
			t.saveState() // keep every byte for the next attempt or process
		}
		return hashes{}, err
	}
	if err := <-hashDone; err != nil {
		return hashes{}, err
	}
	return h.sums(), nil
}

// fetchAll downloads the incomplete chunks: one stream for a single-chunk
// file; otherwise the first chunk alone until the server has shown that it
// honours Range (206), then up to Jobs chunks at once.
func (t *transfer) fetchAll(ctx context.Context, pending *http.Response) error {
	var todo []*chunk
	for _, ch := range t.chunks {
		if !ch.complete() {
			todo = append(todo, ch)
		}
	}
	if len(todo) == 0 {
		if pending != nil {
			pending.Body.Close()
		}
		return nil
	}
	if !t.multi {
		return t.fetchChunk(ctx, todo[0], pending)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.rangeOK = make(chan struct{})
	t.rangeOnce = sync.Once{}
	queue := make(chan *chunk, len(todo))
	for _, ch := range todo[1:] {
		queue <- ch
	}
	close(queue)
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		firstErr error
	)
	fail := func(err error) {
		failOnce.Do(func() { firstErr = err; cancel() })
	}
	work := func() {
		for ch := range queue {
			if ctx.Err() != nil {
				return
			}
			if err := t.fetchChunk(ctx, ch, nil); err != nil {
				fail(err)
				return
			}
		}
	}
	wg.Go(func() {
		if err := t.fetchChunk(ctx, todo[0], pending); err != nil {
			fail(err)
			return
		}
		t.confirmRange() // the first chunk may have been resumed to its end
		work()
	})
	for i := 1; i < min(t.c.Jobs, len(todo)); i++ {
		wg.Go(func() {
			select {
			case <-t.rangeOK:
				work()
			case <-ctx.Done():
			}
		})
	}
	wg.Wait()
	return firstErr
}

func (t *transfer) confirmRange() {
	if t.rangeOK != nil {
		t.rangeOnce.Do(func() { close(t.rangeOK) })
	}
}

// fetchChunk downloads one chunk to its end, resuming after failures with
// Range. The retry count restarts whenever bytes arrive, unless the attempt
// ended as stalled (too slow).
func (t *transfer) fetchChunk(ctx context.Context, ch *chunk, pending *http.Response) error {
	failures, renewals := 0, 0
	for !ch.complete() {
		select {
		case t.c.streams <- struct{}{}:
		case <-ctx.Done():
			if pending != nil {
				pending.Body.Close()
			}
			return ctx.Err()
		}
		n, err := t.attempt(ctx, ch, pending)
		<-t.c.streams
		pending = nil
		if err == nil {
			if ch.complete() {
				return nil
			}
			err = &retryError{err: fmt.Errorf("the server ended the response at byte %d of %d", ch.pos(), t.size)}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *stallError
		if n > 0 && !errors.As(err, &se) {
			failures = 0 // progress; but a trickle that stalled is no progress, however many bytes it brought
		}
		var rs *restartError
		var re *retryError
		switch {
		case errors.As(err, &rs):
			return err
		case errors.Is(err, errExpired):
			if renewals >= 2 {
				return &Error{Kind: ErrForbidden, Repo: t.what.repo, File: t.what.file,
					Msg: fmt.Sprintf("download of %s in %s: the CDN keeps refusing the signed URL", t.what.file, t.what.repo)}
			}
			renewals++
			t.c.logf("%s: the CDN refused the signed URL; asking the Hub for a new one", t.what.file)
			if err := t.src.renew(ctx); err != nil {
				return err
			}
		case errors.As(err, &re):
			failures++
			if failures > t.c.Backoff.Retries {
				return t.giveUp(re)
			}
			wait := re.wait
			if wait == 0 {
				wait = t.c.Backoff.delay(failures - 1)
			}
			t.c.logf("%s: %v at byte %d; resuming in %v (attempt %d of %d)", t.what.file, re.err, ch.pos(), wait, failures+1, t.c.Backoff.Retries+1)
			if err := t.c.sleep(ctx, wait); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// giveUp turns the last transient failure into the final error.
func (t *transfer) giveUp(re *retryError) error {
	var he *Error
	if errors.As(re.err, &he) {
		return he
	}
	return &Error{Kind: ErrNetwork, Repo: t.what.repo, File: t.what.file,
		Msg: fmt.Sprintf("download of %s in %s failed after %d attempts", t.what.file, t.what.repo, t.c.Backoff.Retries+1), Err: re.err}
}

// attempt makes one request for the rest of ch (or consumes pending) and
// copies the body to disk. It returns how many bytes it wrote.
func (t *transfer) attempt(ctx context.Context, ch *chunk, pending *http.Response) (int64, error) {
	pos, end := ch.pos(), ch.end
	resp := pending
	if resp == nil {
		// The request lives in t.base, not ctx, so that a 200 answer can
		// outlive this run and be handed to the next one (restartError);
		// until then, ending ctx cancels it.
		reqCtx, reqCancel := context.WithCancel(t.base)
		stop := context.AfterFunc(ctx, reqCancel)
		u := t.src.get()
		req := t.c.newRequest(reqCtx, http.MethodGet, u, t.c.onEndpoint(u))
		if t.multi || pos > 0 || end < t.size {
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", pos, end-1))
		}
		var err error
		if resp, err = t.c.contentGet(req); err != nil {
			stop()
			reqCancel()
			if ctx.Err() == nil && retryableErr(ctx, err) {
				return 0, &retryError{err: err}
			}
			return 0, err
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: reqCancel, detach: stop}
	}
	keep := false
	defer func() {
		if !keep {
			resp.Body.Close()
		}
	}()
	limit := end - pos
	switch st := resp.StatusCode; {
	case st == http.StatusPartialContent:
		cs, ce, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || cs != pos || ce < cs || (total >= 0 && total != t.size) {
			return 0, &Error{Kind: ErrProtocol, Repo: t.what.repo, File: t.what.file, Status: st,
				Msg: fmt.Sprintf("download of %s: asked for bytes %d-%d of %d, got Content-Range %q", t.what.file, pos, end-1, t.size, resp.Header.Get("Content-Range"))}
		}
		t.confirmRange()
		limit = min(ce+1, end) - pos
	case st == http.StatusOK:
		if pos != 0 || end != t.size || t.multi {
			// The server ignored Range (CloudFront does with gzip): its
			// body is the whole file, so start over with it.
			keep = true
			if cb, ok := resp.Body.(*cancelBody); ok {
				cb.detach()
			}
			return 0, &restartError{reason: "the server ignored the Range request (HTTP 200 instead of 206)", pending: resp, noRanges: true}
		}
		if resp.ContentLength >= 0 && resp.ContentLength != t.size {
			return 0, &Error{Kind: ErrChecksum, Repo: t.what.repo, File: t.what.file,
				Msg: fmt.Sprintf("download of %s: the server sends %d bytes, the Hub lists %d", t.what.file, resp.ContentLength, t.size)}
		}
	case st == http.StatusRequestedRangeNotSatisfiable:
		return 0, &restartError{reason: "the server refused the range (HTTP 416)"}
	case (st == http.StatusForbidden || st == http.StatusUnauthorized) && !t.c.onEndpoint(resp.Request.URL):
		return 0, errExpired
	case retryableStatus(st):
		herr := t.c.httpError(resp, t.what)
		wait, ok := serverWait(resp.Header, time.Now())
		if ok && wait > t.c.Backoff.MaxWait {
			return 0, &Error{Kind: ErrRateLimited, Repo: t.what.repo, File: t.what.file, Status: st,
				Msg: fmt.Sprintf("%s asks to wait %v before retrying the download of %s; try again later", resp.Request.URL.Host, wait.Round(time.Second), t.what.file)}
		}
		return 0, &retryError{err: herr, wait: wait}
	default:
		return 0, t.c.httpError(resp, t.what)
	}
	n, err := t.copyBody(ctx, ch, resp.Body, limit)
	if err != nil {
		var he *Error
		if ctx.Err() != nil || errors.As(err, &he) {
			return n, err
		}
		return n, &retryError{err: fmt.Errorf("connection lost: %w", err)}
	}
	return n, nil
}

// copyBody writes up to limit bytes of body at the chunk's position. Each
// read is written at once (no waiting for a full buffer), so whatever has
// arrived is on disk: a killed process loses nothing it received, and a
// slow link still shows progress.
func (t *transfer) copyBody(ctx context.Context, ch *chunk, body io.Reader, limit int64) (int64, error) {
	buf := getBuf()
	defer putBuf(buf)
	var written int64
	for written < limit {
		want := min(int64(len(buf)), limit-written)
		n, rerr := body.Read(buf[:want])
		if n > 0 {
			if _, werr := t.f.WriteAt(buf[:n], ch.pos()); werr != nil {
				return written, diskErr(werr, t.part)
			}
			ch.done.Add(int64(n))
			written += int64(n)
			t.notify()
			t.prog.add(int64(n))
		}
		if rerr != nil {
			if written == limit {
				return written, nil
			}
			if rerr == io.EOF {
				return written, io.ErrUnexpectedEOF
			}
			return written, rerr
		}
	}
	return written, nil
}

// cancelBody releases a download request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	detach func() bool // stops the run's context from cancelling the request
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.detach()
	b.cancel()
	return err
}

// contentGet sends a download request, following redirects of any kind (a
// CDN may redirect again). The token goes only where the client or the Hub
// itself sends it: a redirect keeps it only when the Hub answered it and it
// points at the Hub. Once another host (the CDN) has answered, no later hop
// carries it, even one that leads back to the Hub: a host that is not the
// Hub must never choose where the token goes.
func (c *Client) contentGet(req *http.Request) (*http.Response, error) {
	auth := req.Header.Get("Authorization") != ""
	for hop := 0; ; hop++ {
		resp, err := c.send(req, c.StallTimeout)
		if err != nil {
			return nil, err
		}
		if !isRedirect(resp.StatusCode) {
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		next, perr := req.URL.Parse(loc)
		if loc == "" || perr != nil {
			return resp, nil
		}
		drain(resp)
		if hop >= maxRedirects {
			return nil, &Error{Kind: ErrProtocol, Status: resp.StatusCode,
				Msg: fmt.Sprintf("download from %s: more than %d redirects (a redirect loop)", req.URL.Host, maxRedirects)}
		}
		auth = auth && c.onEndpoint(req.URL) && c.onEndpoint(next)
		nreq := c.newRequest(req.Context(), http.MethodGet, next, auth)
		if r := req.Header.Get("Range"); r != "" {
			nreq.Header.Set("Range", r)
		}
		req = nreq
	}
}

// parseContentRange parses "bytes a-b/total" (total may be "*" -> -1).
func parseContentRange(v string) (start, end, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	start, err1 = strconv.ParseInt(a, 10, 64)
	end, err2 = strconv.ParseInt(b, 10, 64)
	total = -1
	if tot != "*" {
		total, err3 = strconv.ParseInt(tot, 10, 64)
	}
	return start, end, total, err1 == nil && err2 == nil && err3 == nil && start >= 0
}
