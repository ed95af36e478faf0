package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/anepack/anepack/internal/stall"
)

// attempt makes one request for the rest of u and writes what it brings.
func (t *Transfer) attempt(ctx context.Context, u *Unit) error {
	if t.sequential.Load() {
		return t.sequentialAttempt(ctx)
	}
	off, end := u.SOff+u.done.Load(), u.SOff+u.SN
	if u.Frame {
		off = u.SOff
	} else if len(t.Units) == 1 && off == 0 {
		end = -1 // the whole file in one stream: no Range header at all
	}
	wantRange := off > 0 || end >= 0
	body, partial, err := t.Source.Get(ctx, off, end)
	if err != nil {
		return err
	}
	defer body.Close()
	if wantRange && !partial {
		if t.rangeSeen.Load() {
			// Ranges worked a moment ago: a whole-file answer now means the file
			// changed under the If-Range validator.
			return ErrChanged
		}
		// The server ignores Range (or the file changed since an earlier run):
		// everything comes from this one stream.
		return t.switchSequential(body)
	}
	if partial {
		t.rangeSeen.Store(true)
		t.confirmRange()
	}
	if u.Frame {
		return t.readFrame(body, u)
	}
	return t.copyRaw(body, u, u.N-u.done.Load())
}

// copyRaw copies up to want bytes of body into u at its current end. Each read is written at
// once (no waiting for a full buffer), so whatever has arrived is on disk: a killed process
// loses nothing it received, and a slow link still shows progress.
func (t *Transfer) copyRaw(body io.Reader, u *Unit, want int64) error {
	buf := getBuf()
	defer putBuf(buf)
	for want > 0 {
		n, rerr := body.Read(buf[:min(int64(len(buf)), want)])
		if n > 0 {
			if _, werr := t.f.WriteAt(buf[:n], u.pos()); werr != nil {
				return t.diskErr(werr)
			}
			u.done.Add(int64(n))
			want -= int64(n)
			t.fetched.Add(int64(n))
			t.advance(int64(n))
		}
		if rerr != nil && want > 0 {
			return readErr(rerr)
		}
	}
	return nil
}

// readErr classifies an error reading a response body: a clean end before the bytes asked
// for, a stall and a lost connection (a cut body is io.ErrUnexpectedEOF) are all retried.
func readErr(err error) error {
	switch {
	case err == io.EOF:
		return ErrShort
	case errors.Is(err, stall.ErrStalled):
		return err
	}
	return &Transient{Err: fmt.Errorf("connection lost: %w", err)}
}

// readFrame reads one compressed frame from body, decodes it and writes it.
func (t *Transfer) readFrame(body io.Reader, u *Unit) error {
	comp := make([]byte, u.SN)
	n, err := io.ReadFull(body, comp)
	t.fetched.Add(int64(n))
	if err != nil {
		return readErr(err)
	}
	out, err := t.Decoder.Decode(comp, u.N, u.Filter)
	if err != nil {
		return &frameError{off: u.SOff, err: err}
	}
	defer t.Decoder.Release(out)
	if _, err := t.f.WriteAt(out, u.Off); err != nil {
		return t.diskErr(err)
	}
	u.done.Store(u.N)
	t.advance(u.N)
	return nil
}

// switchSequential takes the whole file from one 200 answer to a ranged request: every unit is
// written again, in order, from this stream (bytes from an earlier run may belong to an older
// version of the file), and the other workers stop.
func (t *Transfer) switchSequential(body io.Reader) error {
	t.logf("%s: the server ignored the Range request (HTTP 200 instead of 206) and sent the whole file instead of a range; downloading it in one stream from byte 0", t.Label)
	t.startOver()
	t.confirmRange()
	return t.readSequential(body)
}

// startOver forgets every unit's progress and fetches the file in one stream from byte 0.
func (t *Transfer) startOver() {
	t.sequential.Store(true)
	for _, u := range t.Units {
		u.done.Store(0)
	}
	t.progress(-t.written.Swap(0))
	t.gen.Add(1) // the hasher starts over
}

// sequentialAttempt restarts the one stream from the beginning.
func (t *Transfer) sequentialAttempt(ctx context.Context) error {
	body, _, err := t.Source.Get(ctx, 0, -1)
	if err != nil {
		return err
	}
	defer body.Close()
	return t.readSequential(body)
}

// readSequential reads every unit in order from a stream that starts at byte 0 of the file,
// skipping what is already on disk.
func (t *Transfer) readSequential(body io.Reader) error {
	for _, u := range t.Units {
		skip := u.SN
		if !u.complete() && !u.Frame {
			skip = u.done.Load()
		} else if !u.complete() {
			skip = 0
		}
		if skip > 0 {
			if _, err := io.CopyN(io.Discard, body, skip); err != nil {
				return readErr(err)
			}
		}
		if u.complete() {
			continue
		}
		var err error
		if u.Frame {
			err = t.readFrame(body, u)
		} else {
			err = t.copyRaw(body, u, u.N-u.done.Load())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// advance records n more output bytes and wakes the hasher.
func (t *Transfer) advance(n int64) {
	t.written.Add(n)
	t.progress(n)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// frontier is the end of the contiguous completed prefix of the output: the hasher may read up
// to here.
func (t *Transfer) frontier() int64 {
	for _, u := range t.Units {
		d := u.done.Load()
		if d < u.N {
			if u.Frame {
				return u.Off
			}
			return u.Off + d
		}
	}
	return t.Size
}
