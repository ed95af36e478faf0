package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/store"
)

// newListCmd is `anerun list`: the bundles in the local store.
func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bundles in the local store",
		Long: `list shows every reference in the local store ($ANEPACK_HOME, default ~/.cache/anepack)
with its model, size, digest and when it was pulled; a bundle no reference names shows as
<none>, one that was found corrupt and deleted as (missing: pulled again on next use).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := listStore()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if list == nil {
					list = []store.Entry{}
				}
				return enc.Encode(list)
			}
			tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "REFERENCE\tMODEL\tSIZE\tDIGEST\tPULLED")
			for _, e := range list {
				ref := e.Reference
				if ref == "" {
					ref = "<none>"
				}
				size := cli.FormatBytes(e.Size)
				if e.Missing {
					size = "(missing)"
				}
				model := e.Model.Name
				if e.Model.DType != "" {
					model += " " + e.Model.DType
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ref, model, size, e.Digest[:min(len(e.Digest), 19)], e.PulledAt.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	return cmd
}

// listStore lists the default store without creating or locking anything, so that listing
// works on a read-only store; a store that does not exist yet holds no bundles, while one
// that cannot be read is an error.
func listStore() ([]store.Entry, error) {
	dir, err := store.DefaultDir()
	if err != nil {
		return nil, err
	}
	st, err := store.OpenReadOnly(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return st.List()
}
