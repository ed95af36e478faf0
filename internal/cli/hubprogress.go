package cli

import (
	"fmt"
	"sync"
)

// HubProgress shows one Hugging Face download (it implements hub.Progress, whose methods it
// has). From its creation until the Hub has listed the repo's files it is a spinner, so that
// a slow Hub does not look like a hung command; then one bar for all the bytes, labelled with
// the files done so far, and "verifying" once every byte is there and only the digests of the
// last files are still being checked. Stop must be called when the download has returned,
// successfully or not (the Hub client calls Finish only once it knows the files).
type HubProgress struct {
	repo  string
	quiet bool

	mu        sync.Mutex
	spin      *Spinner
	bar       *Progress
	files     int
	filesDone int
	total     int64
	done      int64
}

// NewHubProgress starts the spinner for a download of repo.
func NewHubProgress(repo string, quiet bool) *HubProgress {
	return &HubProgress{repo: repo, quiet: quiet, spin: NewSpinner(repo+": asking the Hub for its files", quiet)}
}

// Start is called once the files to download are known: files of total bytes (files already
// in the cache are not counted).
func (h *HubProgress) Start(files int, bytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spin.Stop()
	h.files, h.filesDone, h.total, h.done = files, 0, bytes, 0
	if files > 0 {
		h.bar = NewProgress(h.label(), bytes, true, h.quiet)
		h.bar.Set(0, bytes)
	}
}

// label says how many files are done, or that the last ones are being verified.
func (h *HubProgress) label() string {
	if h.done >= h.total && h.filesDone < h.files {
		return fmt.Sprintf("verifying %d/%d files", h.filesDone, h.files)
	}
	return fmt.Sprintf("downloading %d/%d files", h.filesDone, h.files)
}

// Add reports n more bytes on disk (negative when a file starts over).
func (h *HubProgress) Add(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done += n
	if h.bar != nil {
		h.bar.SetLabel(h.label())
		h.bar.Set(h.done, h.total)
	}
}

// FileDone reports one file downloaded and verified.
func (h *HubProgress) FileDone(path string, size int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.filesDone++
	if h.bar != nil {
		h.bar.SetLabel(h.label())
	}
}

// Finish ends the bar.
func (h *HubProgress) Finish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bar != nil {
		h.bar.Finish()
	}
}

// Stop ends the spinner and the bar, whichever is up.
func (h *HubProgress) Stop() {
	h.spin.Stop()
	h.Finish()
}
