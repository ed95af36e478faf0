package format

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// AbortOnSignal aborts w when the process receives one of sigs (os.Interrupt, SIGTERM and
// SIGHUP when none are given: a closed terminal or a lost SSH session sends SIGHUP), so that
// Ctrl-C during a long pack leaves no temporary file behind and no bundle at the target path. The goroutine writing the bundle then sees its next write, End
// or Commit fail with an error wrapping ErrAborted, and should return it; exiting is the
// caller's business. After the first signal this handler stops listening, so a second Ctrl-C
// gets the default action (the process dies) unless the caller listens for it too.
//
// Call the returned stop function once Commit or Abort has returned; it is idempotent.
func AbortOnSignal(w *Writer, sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case <-c:
			signal.Stop(c)
			w.Abort()
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(c)
			close(done)
		})
	}
}
