// Package cli holds what both command-line tools share: progress reporting that suits a
// terminal or a log file, and cancellation on Ctrl-C.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Progress reports a long task: a progress bar on a terminal, otherwise a few plain lines
// (at 25% steps), so logs stay readable.
type Progress struct {
	label   string
	w       io.Writer
	bar     *progressbar.ProgressBar
	bytes   bool
	total   int64
	quarter int64 // last quarter printed in line mode
	start   time.Time
}

// NewProgress starts reporting a task of total units (bytes when isBytes) on stderr.
// Quiet disables all output.
func NewProgress(label string, total int64, isBytes, quiet bool) *Progress {
	p := &Progress{label: label, w: os.Stderr, bytes: isBytes, total: total, start: time.Now()}
	if quiet {
		p.w = io.Discard
		return p
	}
	if IsTerminal(os.Stderr) {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(label),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }),
		}
		if isBytes {
			opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true))
		}
		p.bar = progressbar.NewOptions64(total, opts...)
	}
	return p
}

// Set records progress: done units of total (total may change, e.g. when it becomes known).
func (p *Progress) Set(done, total int64) {
	if p.bar != nil {
		if total != p.total {
			p.bar.ChangeMax64(total)
			p.total = total
		}
		_ = p.bar.Set64(done)
		return
	}
	p.total = total
	if total <= 0 {
		return
	}
	if q := done * 4 / total; q > p.quarter && q < 4 {
		p.quarter = q
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s)\n", p.label, q*25, p.amount(done), p.amount(total))
	}
}

// Finish ends the report with a summary line.
func (p *Progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	fmt.Fprintf(p.w, "%s: done, %s in %.1fs\n", p.label, p.amount(p.total), time.Since(p.start).Seconds())
}

func (p *Progress) amount(n int64) string {
	if p.bytes {
		return FormatBytes(n)
	}
	return fmt.Sprint(n)
}

// FormatBytes renders n bytes with a binary unit, e.g. "942.3 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// SignalContext returns a context cancelled by SIGINT, SIGTERM or SIGHUP (a closed terminal or
// a lost SSH session), so long tasks can stop cleanly (removing temp files) instead of dying
// mid-write. A second signal exits at once.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case <-ch:
			fmt.Fprintln(os.Stderr, "interrupted; stopping")
			cancel()
		case <-ctx.Done():
			signal.Stop(ch)
			return
		}
		<-ch
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}
