package acquire

import (
	"io"

	"github.com/anepack/anepack/hub"
)

// Display is how the work of this package is shown. The command-line tools draw on the
// terminal; the zero value shows nothing, and any field may be left nil to show nothing of
// its kind.
type Display struct {
	// Task starts the display of a task of total bytes ("verifying", "converting weights").
	Task func(label string, total int64) Task
	// Download starts the display of a download of repo from the Hugging Face Hub, from
	// before the Hub has listed the repo's files, so that a slow Hub does not look like a hung
	// command.
	Download func(repo string) HubProgress
	// Log receives the one-line summaries (a download, a stored bundle), the packer's
	// warnings and the Hub client's log lines.
	Log io.Writer
}

// Task shows one task of a known size.
type Task interface {
	// Set reports done units of total.
	Set(done, total int64)
	// Finish ends the display.
	Finish()
}

// HubProgress shows one download from the Hub: it receives the Hub client's progress, and
// Stop once the download has returned, whether or not the client got as far as Start.
type HubProgress interface {
	hub.Progress
	// Stop ends the display, whatever it shows.
	Stop()
}

// task starts a display of a task, or a silent one.
func (d Display) task(label string, total int64) Task {
	if d.Task == nil {
		return silentTask{}
	}
	return d.Task(label, total)
}

type silentTask struct{}

func (silentTask) Set(int64, int64) {}
func (silentTask) Finish()          {}
