package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/acquire"
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

// client builds a hub client from the environment (HF_TOKEN, HF_ENDPOINT, HF_HOME,
// HF_HUB_CACHE, HF_HUB_OFFLINE, ...) with the flags on top. Progress is drawn by
// acquire.Download.
func (f *hubFlags) client() (*hub.Client, error) {
	c, err := hubClient()
	if err != nil {
		return nil, err
	}
	if f.token != "" {
		c.Token, c.TokenSource = f.token, "--token"
	}
	c.Offline = c.Offline || f.offline
	c.Jobs = f.jobs
	return c, nil
}

// resolveModel turns `anepack MODEL`'s argument into a checkpoint directory: an existing
// directory is used as is; an Org/Name id is fetched from the Hub into the Hugging Face cache
// (only the files packing needs) and its snapshot folder is used, with the resolved commit and
// the verified digests for the bundle's provenance. Anything else gets an error that says what
// MODEL should be: a GGUF file, a bundle, a missing path.
func resolveModel(ctx context.Context, arg string, f *hubFlags, quiet bool) (*acquire.Source, error) {
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			origin, _ := filepath.Abs(arg)
			return &acquire.Source{Dir: arg, Origin: origin}, nil
		}
		if err := acquire.CheckNotGGUF(arg); err != nil {
			return nil, err
		}
		if b, err := format.Open(arg); err == nil {
			b.Close()
			return nil, fmt.Errorf("%s is already a .aneb bundle: run it with `anerun %s \"prompt\"`, or add it to the store with `anerun import %s`", arg, arg, arg)
		}
		return nil, fmt.Errorf("%s is a file; MODEL is a checkpoint directory (config.json, tokenizer files, *.safetensors) or a Hugging Face repo id such as Qwen/Qwen2.5-0.5B-Instruct", arg)
	}
	if err := acquire.CheckNotGGUF(arg); err != nil {
		return nil, err
	}
	if !hub.IsRepoID(arg) {
		return nil, fmt.Errorf("%s: no such directory; MODEL is a checkpoint directory or a Hugging Face repo id in the Org/Name form, e.g. Qwen/Qwen2.5-0.5B-Instruct", arg)
	}
	s, err := fetchRepo(ctx, arg, f, hub.PackFilter, quiet)
	if err != nil {
		return nil, err
	}
	return acquire.FromSnapshot(s)
}

// fetchRepo downloads what want accepts of repo into the cache, showing progress (a spinner
// while the Hub lists the files) and a summary on stderr.
func fetchRepo(ctx context.Context, repo string, f *hubFlags, want func(string) bool, quiet bool) (*hub.Snapshot, error) {
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	return acquire.Download(ctx, c, repo, f.revision, want, display(quiet))
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
		Args:         cli.Args(0, "REPO"),
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
				if err := acquire.CheckCheckpoint(s); err != nil {
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
