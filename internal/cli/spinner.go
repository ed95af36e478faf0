package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Spinner shows that something is under way whose size is not known yet (the Hub listing a
// repo's files): on a terminal a turning mark and the seconds waited, redrawn until Stop;
// otherwise one line when it starts. Stop erases it on a terminal: what follows (a bar, an
// error) says how it ended.
type Spinner struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// spinFrames are the spinner's marks, one per redraw.
var spinFrames = []string{"|", "/", "-", `\`}

// NewSpinner starts a spinner labelled label on stderr; quiet shows nothing.
func NewSpinner(label string, quiet bool) *Spinner {
	return newSpinner(label, quiet, barsOnStderr(), Stderr())
}

func newSpinner(label string, quiet, tty bool, w io.Writer) *Spinner {
	s := &Spinner{stop: make(chan struct{}), done: make(chan struct{})}
	if quiet || !tty {
		if !quiet {
			fmt.Fprintln(w, label+" ...")
		}
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		start := time.Now()
		t := time.NewTicker(drawEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			draw(fit(fmt.Sprintf("%s %s %.1fs", label, spinFrames[i%len(spinFrames)], time.Since(start).Seconds())))
			select {
			case <-t.C:
			case <-s.stop:
				erase()
				return
			}
		}
	}()
	return s
}

// Stop ends the spinner and waits until its line is gone. It may be called more than once.
func (s *Spinner) Stop() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
