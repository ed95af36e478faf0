package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/dist"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/store"
)

// newRmCmd is `anerun rm REF|DIGEST...`: remove bundles from the local store.
func newRmCmd() *cobra.Command {
	var partial bool
	cmd := &cobra.Command{
		Use:   "rm REF|DIGEST...",
		Short: "Remove bundles from the local store",
		Long: `rm removes references from the local store; a bundle is deleted when no reference names it
any more. A digest (sha256:<hex>, or a unique prefix of at least 6 hex digits such as
sha256:9ab1cb) removes the bundle and every reference to it. --partial deletes what interrupted
pulls left for resuming.`,
		Example: `  anerun rm oci://ghcr.io/me/qwen:0.5b
  anerun rm sha256:9ab1cb4463
  anerun rm --partial`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !partial {
				return errors.New("expected references or digests to remove (or --partial)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := store.OpenDefault()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var failed []string
			for _, a := range args {
				target := a
				if !strings.HasPrefix(a, "sha256:") {
					if r, err := dist.ParseRef(a); err == nil && r.IsRemote() {
						target = r.String() // the canonical form the store names it by
					}
				}
				r, err := st.Remove(cmd.Context(), target)
				if err != nil {
					failed = append(failed, err.Error())
					continue
				}
				for _, e := range r.Refs {
					fmt.Fprintf(out, "removed %s\n", e.Reference)
				}
				for _, d := range r.Blobs {
					fmt.Fprintf(out, "deleted %s\n", d)
				}
				if r.Freed > 0 {
					fmt.Fprintf(out, "freed %s\n", cli.FormatBytes(r.Freed))
				}
			}
			if partial {
				n, err := st.RemoveTemp()
				if err != nil {
					failed = append(failed, err.Error())
				} else {
					fmt.Fprintf(out, "deleted partial downloads: %s freed\n", cli.FormatBytes(n))
				}
			}
			if len(failed) > 0 {
				return errors.New(strings.Join(failed, "; "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&partial, "partial", false, "also delete partial downloads kept for resuming")
	return cmd
}
