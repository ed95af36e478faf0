package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/acquire"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/remote"
	"github.com/anepack/anepack/store"
)

// newPullCmd is `anerun pull MODEL|REF`: fetch into the local store, run nothing.
func newPullCmd() *cobra.Command {
	var (
		f        remote.Flags
		dtype    string
		revision string
	)
	cmd := &cobra.Command{
		Use:   "pull MODEL|REF",
		Short: "Fetch a model (Org/Name) or a bundle (oci://, hf://, https://) into the local store",
		Long: `pull brings a model into the local store ($ANEPACK_HOME, default ~/.cache/anepack) without
running it, so that anerun MODEL "prompt" starts at once, offline too. The path of the bundle in
the store is printed on stdout.

A Hugging Face model id (Org/Name[:tag]) is fetched into the Hugging Face cache (or taken from
it), packed with the tag's weight type (f16 by default; --dtype is the same as the tag) and
stored as Org/Name:tag. Pulling it again asks the Hub for the revision's commit and packs again
only when it changed.

A reference names one bundle, which is downloaded, verified (its sha256) and recorded under the
reference. An interrupted download resumes where it stopped, also in a new process:
  oci://registry/ns/name:tag   or   oci://registry/ns/name@sha256:<hex>
  hf://org/repo[@revision]/file.aneb   (token from HF_TOKEN)
  https://host/path/model.aneb [--digest sha256:<hex>]`,
		Example: `  anerun pull Qwen/Qwen2.5-0.5B-Instruct
  anerun pull Qwen/Qwen2.5-0.5B-Instruct:int8
  anerun pull oci://ghcr.io/me/qwen:0.5b
  anerun pull https://example.com/qwen.aneb --digest sha256:9ab1...`,
		Args: cli.Args(0, "MODEL|REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			if r, err := remote.ParseRef(args[0]); err == nil && !r.IsRemote() {
				n, ok, err := modelname.Parse(args[0], dtype)
				if err != nil {
					return err
				}
				if !ok || !n.IsRepo() {
					return fmt.Errorf("%s: expected a Hugging Face model id (Org/Name[:tag]) or a reference (oci://, hf://, https://); a bundle file is added with anerun import", args[0])
				}
				p, err := pullModel(ctx, n, revision, f.Quiet)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), p)
				return nil
			}
			if dtype != "" || revision != "" {
				return fmt.Errorf("--dtype and --revision apply to a model id (Org/Name); %s names one bundle", args[0])
			}
			return pullRef(ctx, cmd, args[0], &f)
		},
	}
	f.RegisterPull(cmd.Flags())
	cmd.Flags().StringVar(&dtype, "dtype", "", "for a model id, the weight type to pack: f16 (default), f32, int8 or int4; the same as Org/Name:TAG")
	cmd.Flags().StringVar(&revision, "revision", "", "for a model id, the branch, tag or commit of the Hugging Face repo (default main)")
	return cmd
}

// pullModel makes the store hold n packed from the repo's revision: when it holds n packed
// from the commit the revision names now, nothing is done; otherwise the repo is fetched (or
// taken from the Hugging Face cache) and packed again.
func pullModel(ctx context.Context, n modelname.Name, revision string, quiet bool) (string, error) {
	st, err := store.OpenDefault()
	if err != nil {
		return "", err
	}
	st.Log = cli.Stderr()
	c, err := hubClient()
	if err != nil {
		return "", err
	}
	start := time.Now()
	snap, err := acquire.Download(ctx, c, n.Model, revision, hub.PackFilter, display(quiet))
	if err != nil {
		return "", err
	}
	src, err := acquire.FromSnapshot(snap)
	if err != nil {
		return "", err
	}
	if e, err := st.Lookup(n.String()); err == nil && e.Source == "packed "+src.Origin {
		prog := cli.NewProgress("verifying "+n.String(), 0, true, quiet)
		s, err := acquire.Find(ctx, st, n, prog.Set)
		prog.Finish()
		if err == nil {
			if !quiet {
				fmt.Fprintf(cli.Stderr(), "%s is up to date: packed from %s\n", n, src.Origin)
			}
			return s.Path, nil
		}
		var ce *store.CorruptError
		if !errors.As(err, &ce) && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
	}
	s, err := acquire.PackSource(ctx, st, src, n, start, display(quiet))
	if err != nil {
		return "", err
	}
	return s.Path, nil
}

// pullRef downloads the bundle a reference names into the store.
func pullRef(ctx context.Context, cmd *cobra.Command, ref string, f *remote.Flags) error {
	opts, err := f.Options(cmd.InOrStdin(), cli.Stderr(), remoteProgress)
	if err != nil {
		return err
	}
	p, err := remote.Pull(ctx, ref, opts)
	if err != nil {
		return err
	}
	if !f.Quiet {
		e := p.Entry
		what := fmt.Sprintf("%s (%s, %s)", e.Model.Name, e.Model.Architecture, e.Model.DType)
		switch {
		case p.Cached:
			fmt.Fprintf(cli.Stderr(), "%s: already in the store: %s, %s\n", ref, what, e.Digest)
		default:
			via := ""
			if p.Compressed {
				via = fmt.Sprintf(", %s over the network (zstd frames)", bytesize.Format(p.Fetched))
			}
			if p.Resumed > 0 {
				via += fmt.Sprintf(", resumed after %s", bytesize.Format(p.Resumed))
			}
			fmt.Fprintf(cli.Stderr(), "pulled %s: %s, %s in %.1fs (%s, verified%s), %s\n",
				ref, what, bytesize.Format(e.Size), p.Elapsed.Seconds(), cli.FormatRate(e.Size-p.Resumed, p.Elapsed), via, e.Digest)
		}
	}
	fmt.Fprintln(cmd.OutOrStdout(), p.Path)
	return nil
}
