package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/acquire"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/store"
)

// newImportCmd is `anerun import FILE`: add a bundle file to the local store under a name.
func newImportCmd() *cobra.Command {
	var (
		name  string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE.aneb",
		Short: "Add a bundle file to the local store, to run it by name",
		Long: `import adds a bundle made by anepack to the local store ($ANEPACK_HOME, default
~/.cache/anepack), so that anerun NAME "prompt" runs it from anywhere. The file is hard-linked
into the store when it is on the same file system (no copy, no extra space), copied otherwise,
and checked on the way in.

The name is the Hugging Face repo the bundle was packed from (Org/Name), or its model name for
a local checkpoint, with its weight type as the tag: Qwen/Qwen2.5-0.5B-Instruct:f16. --name
gives another (a tag, if given, must be the bundle's weight type). The stored name is printed on
stdout.`,
		Example: `  anepack Qwen/Qwen2.5-0.5B-Instruct && anerun import Qwen2.5-0.5B-Instruct.aneb
  anerun import out/qwen2-tiny.aneb --name tiny
  anerun tiny "Hello"`,
		Args: cli.Args(0, "FILE.aneb"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			if err := acquire.CheckNotGGUF(args[0]); err != nil {
				return err
			}
			st, err := store.OpenDefault()
			if err != nil {
				return err
			}
			st.Log = cli.Stderr()
			s, err := acquire.Import(ctx, st, args[0], name, display(quiet))
			if err != nil {
				return err
			}
			if !quiet {
				e := s.Entry
				fmt.Fprintf(cli.Stderr(), "imported %s as %s: %s, %s weights, %s\n", args[0], e.Reference, e.Model.Architecture, e.Model.DType, bytesize.Format(e.Size))
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.Entry.Reference)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the name to store it under (default: its source repo, or its model name)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the stored name")
	return cmd
}
