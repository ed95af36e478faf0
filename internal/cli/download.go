package cli

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

// DownloadProgress receives the progress of one Hugging Face snapshot download (it is
// hub.Progress). Calls may come from several goroutines at once; implementations must be safe
// for that.
type DownloadProgress interface {
	// Start announces the files that will be downloaded and their total size (files already
	// in the cache are not counted).
	Start(files int, bytes int64)
	// Add reports n more bytes on disk; n is negative when a file starts over (a corrupt
	// download, a server that ignored Range).
	Add(n int64)
	// FileDone reports one file downloaded and verified.
	FileDone(path string, size int64)
	// Finish ends the report, after success or failure.
	Finish()
}

// NewDownloadProgress picks how to show the progress of a Hugging Face download on f: an aggregate bar on a
// terminal, one line per finished file otherwise. bars is
// HF_HUB_DISABLE_PROGRESS_BARS read as a tri-state (Env.ProgressBars): nil
// decides by the terminal, false forces lines, true forces the bar. The
// returned writer is for log lines: on a terminal it clears the bar first so
// the two do not overwrite each other.
func NewDownloadProgress(f *os.File, bars *bool) (DownloadProgress, io.Writer) {
	useBar := term.IsTerminal(int(f.Fd()))
	if bars != nil {
		useBar = *bars
	}
	if useBar {
		b := NewDownloadBar(f)
		return b, b
	}
	return NewDownloadLines(f), f
}

// DownloadLines prints one line per finished file and a summary, for logs
// and pipes.
type DownloadLines struct {
	w     io.Writer
	mu    sync.Mutex
	files int
	done  int
	bytes atomic.Int64
	start time.Time
}

// NewDownloadLines writes to w.
func NewDownloadLines(w io.Writer) *DownloadLines { return &DownloadLines{w: w} }

// Start implements DownloadProgress.
func (p *DownloadLines) Start(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.done, p.start = files, 0, time.Now()
	p.bytes.Store(0)
	if files > 0 {
		fmt.Fprintf(p.w, "downloading %d files, %s\n", files, FormatBytesSI(bytes))
	}
}

// Add implements DownloadProgress.
func (p *DownloadLines) Add(n int64) { p.bytes.Add(n) }

// FileDone implements DownloadProgress.
func (p *DownloadLines) FileDone(path string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	fmt.Fprintf(p.w, "[%d/%d] %s (%s)\n", p.done, p.files, path, FormatBytesSI(size))
}

// Finish implements DownloadProgress.
func (p *DownloadLines) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == 0 {
		return
	}
	el := time.Since(p.start)
	fmt.Fprintf(p.w, "downloaded %d of %d files, %s in %v (%s/s)\n", p.done, p.files,
		FormatBytesSI(p.bytes.Load()), el.Round(time.Millisecond), FormatBytesSI(int64(float64(p.bytes.Load())/max(el.Seconds(), 1e-3))))
}

// DownloadBar draws one aggregate bar (bytes, rate, files done) with
// schollz/progressbar. It is also an io.Writer for log lines.
type DownloadBar struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	files int
	done  int
}

// NewDownloadBar draws on w, which should be a terminal.
func NewDownloadBar(w io.Writer) *DownloadBar { return &DownloadBar{w: w} }

// Start implements DownloadProgress.
func (p *DownloadBar) Start(files int, bytes int64) {
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

func (p *DownloadBar) describe() string { return fmt.Sprintf("%d/%d files", p.done, p.files) }

// Add implements DownloadProgress.
func (p *DownloadBar) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Add64(n)
	}
}

// FileDone implements DownloadProgress.
func (p *DownloadBar) FileDone(path string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.bar != nil {
		p.bar.Describe(p.describe())
		p.bar.Add64(1)
	}
}

// Finish implements DownloadProgress.
func (p *DownloadBar) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Exit()
		fmt.Fprintln(p.w)
	}
	p.bar = nil
}

// Write prints a log line above the bar.
func (p *DownloadBar) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Clear()
		defer p.bar.RenderBlank()
	}
	return p.w.Write(b)
}

// FormatBytesSI renders n bytes with a decimal unit, e.g. "1.5 GB", "12.0 MB", "512 B", as the
// Hugging Face Hub shows sizes; negative sizes (a download that starts over) keep their sign.
func FormatBytesSI(n int64) string {
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
