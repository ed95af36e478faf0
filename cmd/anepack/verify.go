package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
)

func newVerifyCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "verify BUNDLE",
		Short: "Check every digest of a bundle; exit 1 naming the section on a mismatch",
		Args:  cli.Args(0, "BUNDLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			b, err := openBundle(args[0])
			if err != nil {
				return &cli.ExitError{Code: 1, Err: err}
			}
			defer b.Close()
			size := int64(b.Header().FileSize)
			prog := cli.NewProgress("verifying", size, true, quiet)
			if err := b.Verify(prog.Set); err != nil {
				return &cli.ExitError{Code: 1, Err: fmt.Errorf("%s: %w", args[0], err)}
			}
			prog.Finish()
			digest, err := b.FileDigest(nil)
			if err != nil {
				return &cli.ExitError{Code: 1, Err: err}
			}
			if !quiet {
				w := cli.Stderr()
				fmt.Fprintf(w, "%s: OK, %d sections, %s checked in %.2fs\n", args[0], len(b.Sections()), bytesize.Format(size), time.Since(start).Seconds())
				fmt.Fprintf(w, "root digest: %s (of the header, section table and manifest; every section's digest is in the table)\n", b.Header().RootDigestString())
				fmt.Fprintf(w, "file digest: %s (sha256 of the whole file: stores and registries name the bundle by it)\n", digest)
			}
			// The file digest on stdout is for scripts (D=$(anepack verify x.aneb)); on a
			// terminal the labelled line above already shows it.
			if quiet || !stdoutIsTerminal() {
				fmt.Println(digest)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the file digest")
	return cmd
}

// stdoutIsTerminal reports whether stdout is a terminal (rather than a pipe or a file).
func stdoutIsTerminal() bool { return cli.IsTerminal(os.Stdout) }
