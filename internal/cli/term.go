package cli

import (
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// plain is set by PlainProgress.
var plain atomic.Bool

// PlainProgress makes progress plain lines even on a terminal (HF_HUB_DISABLE_PROGRESS_BARS).
func PlainProgress() { plain.Store(true) }

// barsOnStderr reports whether progress is drawn as bars: stderr is a terminal and bars were
// not turned off.
func barsOnStderr() bool { return !plain.Load() && IsTerminal(os.Stderr) }

// The terminal's error stream is shared by progress bars, spinners, log lines and the
// interrupt message. A bar redraws its line in place with "\r", so anything else written
// while a bar is on screen would land in the middle of it. Everything the commands write to
// stderr while a bar may be up goes through screen: a log line first clears the bar's line
// (the bar draws itself again on its next update, below the log line), and the interrupt
// message first ends the bar's line and stops every bar from drawing again.
var screen = struct {
	mu sync.Mutex
	w  io.Writer
	// open is set while a bar's or spinner's line is on screen without its newline.
	open bool
	// frozen is set once the process was interrupted: bars and spinners draw no more, so
	// that the message stays the last line.
	frozen bool
}{w: os.Stderr}

// clearLine is the terminal sequence that returns to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// draw replaces the open line with line (no newline), unless the screen is frozen.
func draw(line string) {
	screen.mu.Lock()
	defer screen.mu.Unlock()
	if screen.frozen {
		return
	}
	io.WriteString(screen.w, clearLine+line)
	screen.open = true
}

// drawLast replaces the open line with line and ends it: a finished bar stays on screen.
func drawLast(line string) {
	screen.mu.Lock()
	defer screen.mu.Unlock()
	if screen.frozen {
		return
	}
	io.WriteString(screen.w, clearLine+line+"\n")
	screen.open = false
}

// erase removes the open line (a spinner that is no longer wanted).
func erase() {
	screen.mu.Lock()
	defer screen.mu.Unlock()
	if screen.open && !screen.frozen {
		io.WriteString(screen.w, clearLine)
	}
	screen.open = false
}

// Stderr returns a writer for whole lines on stderr (log lines, notices) that keeps a
// progress bar intact: the bar's line is cleared first and the bar redraws below.
func Stderr() io.Writer { return stderrWriter{} }

type stderrWriter struct{}

func (stderrWriter) Write(b []byte) (int, error) {
	screen.mu.Lock()
	defer screen.mu.Unlock()
	if screen.open && !screen.frozen {
		io.WriteString(screen.w, clearLine)
		screen.open = false
	}
	return screen.w.Write(b)
}

// interruptLine ends whatever line a bar left open, freezes every bar, and writes msg on a
// line of its own.
func interruptLine(msg string) {
	screen.mu.Lock()
	defer screen.mu.Unlock()
	if screen.open && !screen.frozen {
		io.WriteString(screen.w, "\n")
	}
	screen.open = false
	screen.frozen = true
	io.WriteString(screen.w, msg+"\n")
}

// width is the terminal's width in columns, or 80 when it cannot be told; drawn lines are cut
// to fit, since a line that wraps cannot be redrawn in place.
func width() int {
	if f, ok := screen.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 80
}

// fit cuts s to the terminal's width less one column (a line that fills the last column makes
// some terminals wrap).
func fit(s string) string {
	r := []rune(s)
	if max := width() - 1; len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return strings.TrimRight(s, " ")
}
