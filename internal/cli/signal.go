package cli

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// interrupted is set when SignalContext's context was cancelled by a signal.
var interrupted atomic.Bool

// Interrupted reports whether a signal cancelled a SignalContext, so that the command exits
// with ExitInterrupted instead of reporting "context canceled" as a failure.
func Interrupted() bool { return interrupted.Load() }

// ExitInterrupted is the status after Ctrl-C, as shells report a process killed by SIGINT.
const ExitInterrupted = 130

// SignalContext returns a context cancelled by SIGINT, SIGTERM or SIGHUP (a closed terminal or
// a lost SSH session), so long tasks can stop cleanly (removing temp files) instead of dying
// mid-write. The first signal ends any progress bar's line and says "interrupted; stopping"
// on a line of its own; a second signal exits at once.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case <-ch:
			interrupted.Store(true)
			interruptLine(filepath.Base(os.Args[0]) + ": interrupted; stopping")
			cancel()
		case <-ctx.Done():
			signal.Stop(ch)
			return
		}
		<-ch
		os.Exit(ExitInterrupted)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}
