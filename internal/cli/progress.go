// Package cli holds what both command-line tools share: progress bars and spinners that suit a
// terminal or a log file, cancellation on Ctrl-C, exit statuses, argument and flag errors that
// say what was expected, and the version report.
package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/anepack/anepack/internal/bytesize"
)

// Progress reports a long task: a bar redrawn in place on a terminal, otherwise a few plain
// lines (at 25% steps), so logs stay readable. Sizes are in binary units (KiB, MiB, GiB)
// everywhere, as bytesize.Format writes them. A Progress that was never Set prints nothing, not
// even at Finish: a task that turned out to have nothing to do (a bundle the store has
// verified before) leaves no "done in 0.0s" line behind.
type Progress struct {
	label string
	bytes bool
	quiet bool
	tty   bool
	// w receives the plain lines when not on a terminal.
	w     io.Writer
	start time.Time

	mu       sync.Mutex
	done     int64
	total    int64
	started  bool // Set was called
	finished bool
	lastDraw time.Time
	quarter  int64 // the last quarter printed in line mode
}

// drawEvery bounds how often a bar is redrawn: more often only costs time.
const drawEvery = 100 * time.Millisecond

// barWidth is the number of cells of a bar.
const barWidth = 20

// NewProgress starts reporting a task of total units (bytes when isBytes) on stderr. Quiet
// disables all output.
func NewProgress(label string, total int64, isBytes, quiet bool) *Progress {
	return &Progress{label: label, total: total, bytes: isBytes, quiet: quiet, tty: barsOnStderr(), w: Stderr(), start: time.Now()}
}

// SetLabel changes what the task is called from the next update on, e.g. to "verifying" when
// the bytes are all there and what is left is checking them.
func (p *Progress) SetLabel(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.label == label {
		return
	}
	p.label = label
	if p.tty && p.started && !p.finished && !p.quiet {
		draw(p.line(false))
		p.lastDraw = time.Now()
	}
}

// Set records progress: done units of total (total may change, e.g. when it becomes known).
func (p *Progress) Set(done, total int64) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	if !p.started {
		p.started = true
		p.start = time.Now() // the rate counts from the first update, not from construction
	}
	p.done, p.total = done, total
	if p.tty {
		if now := time.Now(); now.Sub(p.lastDraw) >= drawEvery || done >= total {
			draw(p.line(false))
			p.lastDraw = now
		}
		return
	}
	if total <= 0 {
		return
	}
	if q := done * 4 / total; q > p.quarter && q < 4 {
		p.quarter = q
		fmt.Fprintf(p.w, "%s: %d%% (%s of %s)\n", p.label, q*25, p.amount(done), p.amount(total))
	}
}

// Finish ends the report: the bar's final state and time on a terminal, a summary line
// otherwise; nothing at all when there was never any progress to show.
func (p *Progress) Finish() {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if !p.started {
		return
	}
	if p.tty {
		drawLast(p.line(true))
		return
	}
	fmt.Fprintf(p.w, "%s: done, %s in %.1fs\n", p.label, p.amount(p.total), time.Since(p.start).Seconds())
}

// line renders the bar: label, percentage, cells, done/total and rate (or, when final, the
// time taken).
func (p *Progress) line(final bool) string {
	var b strings.Builder
	b.WriteString(p.label)
	frac := 0.0
	if p.total > 0 {
		frac = min(max(float64(p.done)/float64(p.total), 0), 1)
	}
	full := int(frac * barWidth)
	fmt.Fprintf(&b, " %3d%% [%s%s] %s/%s", int(frac*100), strings.Repeat("=", full), strings.Repeat(" ", barWidth-full), p.amount(p.done), p.amount(p.total))
	el := time.Since(p.start)
	switch {
	case final:
		fmt.Fprintf(&b, " in %.1fs", el.Seconds())
	case p.bytes && el > 200*time.Millisecond:
		fmt.Fprintf(&b, " %s/s", bytesize.Format(int64(float64(p.done)/el.Seconds())))
	}
	return fit(b.String())
}

func (p *Progress) amount(n int64) string {
	if p.bytes {
		return bytesize.Format(n)
	}
	return fmt.Sprint(n)
}

// FormatRate renders bytes per second over d, e.g. "312.5 MiB/s".
func FormatRate(n int64, d time.Duration) string {
	if d <= 0 {
		return "- MiB/s"
	}
	return bytesize.Format(int64(float64(n)/d.Seconds())) + "/s"
}
