package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/cli"
)

// hubFlags are the flags of every command that talks to the Hugging Face Hub
// (download, ls, and the root when its argument is a repo id).
type hubFlags struct {
	revision string
	token    string
	jobs     int
	offline  bool
}

func (f *hubFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.revision, "revision", "main", "branch, tag or commit of the Hugging Face repo")
	cmd.Flags().StringVar(&f.token, "token", "", "Hugging Face token (default: $HF_TOKEN or the token file in $HF_HOME)")
	cmd.Flags().IntVar(&f.jobs, "jobs", hub.DefaultJobs, "parallel downloads (files, or ranged chunks of large files)")
	cmd.Flags().BoolVar(&f.offline, "offline", false, "use the Hugging Face cache only, no network (also HF_HUB_OFFLINE=1)")
}

// client builds a hub client from the environment (HF_TOKEN, HF_ENDPOINT,
// HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE, ...) with the flags on top. quiet
// silences progress and log lines; errors are still returned.
func (f *hubFlags) client(quiet bool) (*hub.Client, error) {
	env, err := hub.LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c := env.Client()
	if f.token != "" {
		c.Token, c.TokenSource = f.token, "--token"
	}
	c.Offline = c.Offline || f.offline
	c.Jobs = f.jobs
	if !quiet {
		c.Progress, c.Log = cli.NewDownloadProgress(os.Stderr, env.ProgressBars)
	}
	return c, nil
}

// modelSource is what packing needs to know about the model argument.
type modelSource struct {
	Dir          string // the checkpoint directory (a snapshot folder for a repo)
	Name         string // model name for the manifest and the default output file; "" = the directory's name
	Provenance   format.Provenance
	KnownDigests map[string]string // sha256 of files the hub client verified
}

// resolveModel turns `anepack MODEL`'s argument into a checkpoint directory:
// an existing path is used as is; otherwise an Org/Name id is fetched from
// the Hub into the Hugging Face cache (only the files packing needs) and its
// snapshot folder is used, with the resolved commit and the verified
// digests for the bundle's provenance.
func resolveModel(ctx context.Context, arg string, f *hubFlags, quiet bool) (*modelSource, error) {
	if _, err := os.Stat(arg); err == nil || !hub.IsRepoID(arg) {
		return &modelSource{Dir: arg}, nil
	}
	s, err := fetchRepo(ctx, arg, f, hub.PackFilter, quiet)
	if err != nil {
		return nil, err
	}
	if err := checkCheckpoint(s); err != nil {
		return nil, err
	}
	src := &modelSource{
		Dir:          s.Dir,
		Name:         path.Base(arg), // the snapshot folder is named by the commit
		Provenance:   format.Provenance{Source: "hf", Repo: s.Repo, Revision: s.Revision, Commit: s.Commit},
		KnownDigests: map[string]string{},
	}
	for _, file := range s.Files {
		src.KnownDigests[file.Path] = file.SHA256
	}
	return src, nil
}

// checkCheckpoint refuses a repo that has no config.json at its top level: it
// is not a transformers checkpoint (a GGUF-only repo, an adapter, a dataset
// mirrored as a model), and packing would otherwise fail on a snapshot folder
// that was never created.
func checkCheckpoint(s *hub.Snapshot) error {
	if _, ok := s.File("config.json"); ok {
		return nil
	}
	return fmt.Errorf("%s at %s has no config.json, so it is not a transformers checkpoint anepack can pack (`anepack ls %s` lists its files)",
		s.Repo, s.Commit[:min(12, len(s.Commit))], s.Repo)
}

// fetchRepo downloads what want accepts of repo into the cache and reports
// it on stderr.
func fetchRepo(ctx context.Context, repo string, f *hubFlags, want func(string) bool, quiet bool) (*hub.Snapshot, error) {
	c, err := f.client(quiet)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	s, err := c.Snapshot(ctx, repo, f.revision, want)
	if err != nil {
		return nil, err
	}
	if !quiet {
		var total int64
		for _, file := range s.Files {
			total += file.Size
		}
		fmt.Fprintf(os.Stderr, "%s@%s: %d files, %s (%d downloaded, %s in %.1fs)\n", s.Repo, s.Commit[:12],
			len(s.Files), cli.FormatBytes(total), s.Downloaded, cli.FormatBytes(s.BytesDownloaded), time.Since(start).Seconds())
	}
	return s, nil
}

// newDownloadCmd is `anepack download REPO`: fetch only, print the snapshot
// folder.
func newDownloadCmd() *cobra.Command {
	var (
		hf    hubFlags
		all   bool
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "download REPO",
		Short: "Download a Hugging Face model into the Hugging Face cache and print its folder",
		Long: `download fetches the files anepack needs to pack a model (config, tokenizer files,
safetensors weights and index; --all for every file) into the standard Hugging Face cache
($HF_HUB_CACHE, default ~/.cache/huggingface/hub), where Python tools find them too, and prints
the snapshot folder. Interrupted downloads resume; every file is checked against its sha256.`,
		Example: `  anepack download Qwen/Qwen2.5-0.5B-Instruct
  anepack download Qwen/Qwen2.5-0.5B-Instruct --revision refs/pr/1 --jobs 16
  HF_HUB_OFFLINE=1 anepack download Qwen/Qwen2.5-0.5B-Instruct   # cache only`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !hub.IsRepoID(args[0]) {
				return fmt.Errorf("%q is not a Hugging Face repo id: expected Org/Name, e.g. Qwen/Qwen2.5-0.5B-Instruct", args[0])
			}
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			want := hub.PackFilter
			if all {
				want = nil
			}
			s, err := fetchRepo(ctx, args[0], &hf, want, quiet)
			if err != nil {
				return err
			}
			if !all {
				if err := checkCheckpoint(s); err != nil {
					return err
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.Dir)
			return nil
		},
	}
	hf.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "download every file of the repo, not only what packing needs")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the snapshot folder (and errors)")
	return cmd
}
