package serve

import (
	"context"
	"net/http"
	"time"
)

// sseWriter writes server-sent events ("data: JSON\n\n") and flushes each one, so a client sees
// every token as it is generated.
type sseWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Time // the request's; no write may block beyond it
	buf      []byte
	err      error // the first write error; later sends return it at once
}

// newSSE sends the stream's headers.
func newSSE(w http.ResponseWriter, rc *http.ResponseController, ctx context.Context) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell nginx-like proxies not to buffer the stream
	w.WriteHeader(http.StatusOK)
	e := &sseWriter{w: w, rc: rc}
	e.deadline, _ = ctx.Deadline()
	return e
}

// send writes v as one event.
func (e *sseWriter) send(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	e.buf = append(append(append(e.buf[:0], "data: "...), b...), "\n\n"...)
	return e.write(e.buf)
}

// done ends the stream the way OpenAI does.
func (e *sseWriter) done() error { return e.write([]byte("data: [DONE]\n\n")) }

func (e *sseWriter) write(b []byte) error {
	if e.err != nil {
		return e.err
	}
	// Writes end at the request's deadline, except that an error event sent because the
	// deadline passed gets a second to go out.
	now := time.Now()
	d := now.Add(writeStall)
	if !e.deadline.IsZero() && e.deadline.Before(d) {
		d = e.deadline
		if grace := now.Add(time.Second); d.Before(grace) {
			d = grace
		}
	}
	e.rc.SetWriteDeadline(d)
	if _, err := e.w.Write(b); err != nil {
		e.err = err
		return err
	}
	if err := e.rc.Flush(); err != nil {
		e.err = err
	}
	return e.err
}
