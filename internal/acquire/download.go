package acquire

import (
	"context"
	"fmt"
	"time"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/bytesize"
)

// Download makes the files of repo at revision that want accepts present in the Hugging Face
// cache (downloading what is missing) and shows it on d: the download's progress, the Hub
// client's log lines and a summary line. c's Progress and Log are set here.
func Download(ctx context.Context, c *hub.Client, repo, revision string, want func(string) bool, d Display) (*hub.Snapshot, error) {
	c.Progress, c.Log = nil, d.Log
	// Offline, nothing is asked of the Hub: no display for a listing that never comes.
	var dp HubProgress
	if d.Download != nil && !c.Offline {
		dp = d.Download(repo)
		c.Progress = dp
	}
	start := time.Now()
	s, err := c.Snapshot(ctx, repo, revision, want)
	if dp != nil {
		dp.Stop()
	}
	if err != nil {
		return nil, err
	}
	if d.Log != nil {
		var total int64
		for _, f := range s.Files {
			total += f.Size
		}
		fmt.Fprintf(d.Log, "%s@%s: %d files, %s (%d downloaded, %s in %.1fs)\n", s.Repo, shortCommit(s.Commit),
			len(s.Files), bytesize.Format(total), s.Downloaded, bytesize.Format(s.BytesDownloaded), time.Since(start).Seconds())
	}
	return s, nil
}
