package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
)

// newLsCmd is `anepack ls REPO`: the repo's files and sizes, marking what
// packing would download.
func newLsCmd() *cobra.Command {
	var hf hubFlags
	cmd := &cobra.Command{
		Use:   "ls REPO",
		Short: "List a Hugging Face repo's files and sizes, marking those anepack would download",
		Long: `ls shows every file of a Hugging Face model repo at a revision, with its size and how it is
stored (lfs or git). Files marked with * are the ones packing downloads. With --offline
(or HF_HUB_OFFLINE=1) it lists what the Hugging Face cache holds.`,
		Example:      `  anepack ls Qwen/Qwen2.5-0.5B-Instruct --revision main`,
		Args:         cli.Args(0, "REPO"),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !hub.IsRepoID(args[0]) {
				return fmt.Errorf("%q is not a Hugging Face repo id: expected Org/Name, e.g. Qwen/Qwen2.5-0.5B-Instruct", args[0])
			}
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			c, err := hf.client()
			if err != nil {
				return err
			}
			files, err := c.ListFiles(ctx, args[0], hf.revision)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			var total, packed int64
			var nPacked int
			for _, f := range files {
				mark, storage := " ", "git"
				if hub.PackFilter(f.Path) {
					mark = "*"
					packed += f.Size
					nPacked++
				}
				if f.LFS {
					storage = "lfs"
				}
				total += f.Size
				// A repo's file names are its owner's: escape what a terminal would act on.
				fmt.Fprintf(tw, "%10s\t%s\t%s\t%s\n", bytesize.Format(f.Size), storage, mark, cli.Printable(f.Path))
			}
			tw.Flush()
			fmt.Fprintf(out, "%d files, %s; * = %d files, %s that packing downloads\n",
				len(files), bytesize.Format(total), nPacked, bytesize.Format(packed))
			return nil
		},
	}
	hf.register(cmd)
	cmd.Flags().Lookup("jobs").Hidden = true
	return cmd
}
