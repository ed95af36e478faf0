package main

import (
	"os"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/acquire"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/remote"
)

// display shows what package acquire does on stderr: a bar per task, a spinner while the Hub
// lists a repo's files and then a bar for its download, and the one-line summaries and
// warnings; nothing when quiet.
func display(quiet bool) acquire.Display {
	if quiet {
		return acquire.Display{}
	}
	return acquire.Display{
		Task:     func(label string, total int64) acquire.Task { return cli.NewProgress(label, total, true, false) },
		Download: func(repo string) acquire.HubProgress { return cli.NewHubProgress(repo, false) },
		Log:      cli.Stderr(),
	}
}

// remoteProgress draws one transfer of package remote as a bar on stderr.
func remoteProgress(label string, total int64) remote.Progress {
	return cli.NewProgress(label, total, true, false)
}

// hubClient is the Hugging Face client the environment configures (HF_TOKEN, HF_ENDPOINT,
// HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE, ...). HF_HUB_DISABLE_PROGRESS_BARS=1 turns the bars
// into plain lines, as it does for huggingface_hub.
func hubClient() (*hub.Client, error) {
	env, err := hub.LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if env.ProgressBars != nil && !*env.ProgressBars {
		cli.PlainProgress()
	}
	return env.Client(), nil
}
