package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/dist"
	"github.com/anepack/anepack/internal/cli"
)

// newPullCmd is `anerun pull REF`: fetch a bundle into the local store.
func newPullCmd() *cobra.Command {
	var f dist.Flags
	cmd := &cobra.Command{
		Use:   "pull REF",
		Short: "Download a bundle into the local store (oci://, hf://, https://)",
		Long: `pull downloads a bundle into the local store ($ANEPACK_HOME, default ~/.cache/anepack),
verifies its sha256 and records the reference, so that anerun REF "prompt" runs it without a
download. An interrupted pull resumes where it stopped, also in a new process.

References:
  oci://registry/ns/name:tag   or   oci://registry/ns/name@sha256:<hex>
  hf://org/repo[@revision]/file.aneb   (token from HF_TOKEN)
  https://host/path/model.aneb [--digest sha256:<hex>]

The path of the bundle in the store is printed on stdout.`,
		Example: `  anerun pull oci://ghcr.io/me/qwen:0.5b
  anerun pull hf://me/qwen-aneb/qwen.aneb
  anerun pull https://example.com/qwen.aneb --digest sha256:9ab1...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			opts, err := f.Options(cmd.InOrStdin(), os.Stderr)
			if err != nil {
				return err
			}
			p, err := dist.Pull(ctx, args[0], opts)
			if err != nil {
				return err
			}
			if !f.Quiet {
				e := p.Entry
				what := fmt.Sprintf("%s (%s, %s)", e.Model.Name, e.Model.Architecture, e.Model.DType)
				switch {
				case p.Cached:
					fmt.Fprintf(os.Stderr, "%s: already in the store: %s, %s\n", args[0], what, e.Digest)
				default:
					via := ""
					if p.Compressed {
						via = fmt.Sprintf(", %s over the network (zstd frames)", cli.FormatBytes(p.Fetched))
					}
					if p.Resumed > 0 {
						via += fmt.Sprintf(", resumed after %s", cli.FormatBytes(p.Resumed))
					}
					fmt.Fprintf(os.Stderr, "pulled %s: %s, %s in %.1fs (%.0f MB/s, verified%s), %s\n",
						args[0], what, cli.FormatBytes(e.Size), p.Elapsed.Seconds(), p.MBps(), via, e.Digest)
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), p.Path)
			return nil
		},
	}
	f.RegisterPull(cmd.Flags())
	return cmd
}
