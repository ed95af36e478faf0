package stall

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrStalled is what a watched body's read fails with (wrapped, with the Meter's reason) once
// its Meter has judged the transfer stalled. A stalled attempt is no progress, however many
// bytes it brought: callers must not restart their retry count for it.
var ErrStalled = errors.New("connection stalled")

// Body counts what rc brings into m and turns m's firing into an error wrapping ErrStalled.
// Closing it stops m, closes rc and calls release (which frees the request, e.g. cancels its
// context). parent, if set, is the context of the caller: when it is done the read error is
// the caller's cancellation, not a stall.
func Body(rc io.ReadCloser, m *Meter, release func(), parent context.Context) io.ReadCloser {
	return &body{rc: rc, m: m, release: release, parent: parent}
}

type body struct {
	rc      io.ReadCloser
	m       *Meter
	release func()
	parent  context.Context
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.m.Add(n)
	if err != nil && err != io.EOF && b.m.Fired() && (b.parent == nil || b.parent.Err() == nil) {
		err = fmt.Errorf("%w: %s", ErrStalled, b.m.Reason())
	}
	return n, err
}

func (b *body) Close() error {
	b.m.Stop()
	err := b.rc.Close()
	if b.release != nil {
		b.release()
	}
	return err
}
