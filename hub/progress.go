package hub

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress receives the progress of one Snapshot. Calls may come from
// several goroutines at once; implementations must be safe for that.
type Progress interface {
	// Start announces the files that will be downloaded and their total
	// size (files already in the cache are not counted).
	Start(files int, bytes int64)
	// Add reports n more bytes on disk; n is negative when a file starts
	// over (a corrupt download, a server that ignored Range).
	Add(n int64)
	// FileDone reports one file downloaded and verified.
	FileDone(path string, size int64)
	// Finish ends the report, after success or failure.
	Finish()
}

// NewProgress picks how to show progress on f: an aggregate bar on a
// terminal, one line per finished file otherwise. bars is
// HF_HUB_DISABLE_PROGRESS_BARS read as a tri-state (Env.ProgressBars): nil
// decides by the terminal, false forces lines, true forces the bar. The
// returned writer is for log lines: on a terminal it clears the bar first so
// the two do not overwrite each other.
func NewProgress(f *os.File, bars *bool) (Progress, io.Writer) {
	useBar := term.IsTerminal(int(f.Fd()))
	if bars != nil {
		useBar = *bars
	}
	if useBar {
		b := NewBarProgress(f)
		return b, b
	}
	return NewLineProgress(f), f
}

// LineProgress prints one line per finished file and a summary, for logs
// and pipes.
type LineProgress struct {
	w     io.Writer
	mu    sync.Mutex
	files int
	done  int
	bytes atomic.Int64
	start time.Time
}

// NewLineProgress writes to w.
func NewLineProgress(w io.Writer) *LineProgress { return &LineProgress{w: w} }

// Start implements Progress.
func (p *LineProgress) Start(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.done, p.start = files, 0, time.Now()
	p.bytes.Store(0)
	if files > 0 {
		fmt.Fprintf(p.w, "downloading %d files, %s\n", files, formatBytes(bytes))
	}
}

// Add implements Progress.
func (p *LineProgress) Add(n int64) { p.bytes.Add(n) }

// FileDone implements Progress.
func (p *LineProgress) FileDone(path string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	fmt.Fprintf(p.w, "[%d/%d] %s (%s)\n", p.done, p.files, path, formatBytes(size))
}

// Finish implements Progress.
func (p *LineProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == 0 {
		return
	}
	el := time.Since(p.start)
	fmt.Fprintf(p.w, "downloaded %d of %d files, %s in %v (%s/s)\n", p.done, p.files,
		formatBytes(p.bytes.Load()), el.Round(time.Millisecond), formatBytes(int64(float64(p.bytes.Load())/max(el.Seconds(), 1e-3))))
}

// BarProgress draws one aggregate bar (bytes, rate, files done) with
// schollz/progressbar. It is also an io.Writer for log lines.
type BarProgress struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	files int
	done  int
}

// NewBarProgress draws on w, which should be a terminal.
func NewBarProgress(w io.Writer) *BarProgress { return &BarProgress{w: w} }

// Start implements Progress.
func (p *BarProgress) Start(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.done = files, 0
	if files == 0 {
		return
	}
	// One extra unit per file, added when the file is verified, so that the
	// bar completes with the last file rather than with the last byte (a
	// finished bar would print a new line for every later update).
	p.bar = progressbar.NewOptions64(bytes+int64(files),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetDescription(p.describe()),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
	p.bar.RenderBlank()
}

func (p *BarProgress) describe() string { return fmt.Sprintf("%d/%d files", p.done, p.files) }

// Add implements Progress.
func (p *BarProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Add64(n)
	}
}

// FileDone implements Progress.
func (p *BarProgress) FileDone(path string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.bar != nil {
		p.bar.Describe(p.describe())
		p.bar.Add64(1)
	}
}

// Finish implements Progress.
func (p *BarProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Exit()
		fmt.Fprintln(p.w)
	}
	p.bar = nil
}

// Write prints a log line above the bar.
func (p *BarProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Clear()
		defer p.bar.RenderBlank()
	}
	return p.w.Write(b)
}

// tracker forwards to the Client's Progress (if any) and counts for the
// Snapshot result.
type tracker struct {
	p     Progress
	bytes atomic.Int64
}

func (t *tracker) add(n int64) {
	t.bytes.Add(n)
	if t.p != nil && n != 0 {
		t.p.Add(n)
	}
}

func (t *tracker) fileDone(path string, size int64) {
	if t.p != nil {
		t.p.FileDone(path, size)
	}
}

// formatBytes is a short human size: 1.5 GB, 12.0 MB, 512 B (SI units, as
// the Hub shows them).
func formatBytes(n int64) string {
	const unit = 1000
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for ; (f >= unit || f <= -unit) && i < 5; i++ {
		f /= unit
	}
	return fmt.Sprintf("%.1f %cB", f, "kMGTPE"[i-1])
}
