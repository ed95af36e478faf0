package acquire

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/cli"
)

// Download makes the files of repo at revision that want accepts present in the Hugging Face
// cache (downloading what is missing) and reports it on stderr: a spinner while the Hub lists
// the repo's files, a bar for the download, and a summary line. quiet shows nothing; errors
// are returned either way. c's Progress and Log are set here.
func Download(ctx context.Context, c *hub.Client, repo, revision string, want func(string) bool, quiet bool) (*hub.Snapshot, error) {
	// Offline, nothing is asked of the Hub: no spinner for a listing that never comes.
	hp := cli.NewHubProgress(repo, quiet || c.Offline)
	c.Progress = hp
	if !quiet {
		c.Log = cli.Stderr()
	}
	start := time.Now()
	s, err := c.Snapshot(ctx, repo, revision, want)
	hp.Stop()
	if err != nil {
		return nil, err
	}
	if !quiet {
		var total int64
		for _, f := range s.Files {
			total += f.Size
		}
		fmt.Fprintf(cli.Stderr(), "%s@%s: %d files, %s (%d downloaded, %s in %.1fs)\n", s.Repo, shortCommit(s.Commit),
			len(s.Files), cli.FormatBytes(total), s.Downloaded, cli.FormatBytes(s.BytesDownloaded), time.Since(start).Seconds())
	}
	return s, nil
}

// HubClient is the Hugging Face client the environment configures (HF_TOKEN, HF_ENDPOINT,
// HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE, ...). HF_HUB_DISABLE_PROGRESS_BARS=1 turns the bars
// into plain lines, as it does for huggingface_hub.
func HubClient() (*hub.Client, error) {
	env, err := hub.LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if env.ProgressBars != nil && !*env.ProgressBars {
		cli.PlainProgress()
	}
	return env.Client(), nil
}
