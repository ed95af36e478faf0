package hub

import "sync/atomic"

// Progress receives the progress of one Snapshot (Client.Progress): the command-line tools
// draw it as a bar, a library may log it or ignore it. Calls may come from several goroutines
// at once; implementations must be safe for that.
type Progress interface {
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
