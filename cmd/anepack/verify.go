package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/cli"
)

func newVerifyCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Check every digest of a bundle; exit 1 naming the section on a mismatch",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			b, err := format.Open(args[0])
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer b.Close()
			prog := cli.NewProgress("verifying", int64(b.Header().FileSize), true, quiet)
			if err := b.Verify(prog.Set); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			prog.Finish()
			digest, err := b.FileDigest(nil)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "%s: OK, %d sections, root %s (%.2fs)\n", args[0], len(b.Sections()), b.Header().RootDigestString(), time.Since(start).Seconds())
			}
			fmt.Println(digest)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the file digest")
	return cmd
}
