package hub

import (
	"sync/atomic"

	"github.com/anepack/anepack/internal/cli"
)

// Progress receives the progress of one Snapshot (Client.Progress). Calls may come from several
// goroutines at once; implementations must be safe for that. The interface is defined beside
// the displays that implement it (cli.NewDownloadProgress), where the command-line tools pick
// one.
type Progress = cli.DownloadProgress

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
