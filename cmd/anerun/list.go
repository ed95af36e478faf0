package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/store"
)

// newListCmd is `anerun list`: the bundles in the local store.
func newListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the models and bundles in the local store",
		Long: `list shows every bundle in the local store ($ANEPACK_HOME, default ~/.cache/anepack): its
name (what anerun takes as MODEL), the storage type of its weights, its size, where it came
from (packed from a Hugging Face repo at a commit, imported from a file, or pulled), the first
12 hex digits of its sha256 (what anerun rm also takes) and when it was added. A bundle no name
refers to shows as <none>; one that was found corrupt and deleted as (missing), and is fetched
again on next use.`,
		Args: cli.Args(0),
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
			fmt.Fprintln(tw, "NAME\tDTYPE\tSIZE\tSOURCE\tID\tADDED")
			for _, e := range list {
				name := e.Reference
				if name == "" {
					name = "<none>"
				}
				size := bytesize.Format(e.Size)
				if e.Missing {
					size = "(missing)"
				}
				// The dtype and source come from the bundles' manifests: escape them for the terminal.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cli.Printable(name), cli.Printable(dtypeOf(e)), size, cli.Printable(sourceOf(e)), shortID(e.Digest), e.PulledAt.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	return cmd
}

// dtypeOf is the weight type as a tag (f16, int4, ...), or "-" when the entry does not say.
func dtypeOf(e store.Entry) string {
	if e.Model.DType == "" {
		return "-"
	}
	if t, err := modelname.TagOf(e.Model.DType); err == nil {
		return t
	}
	return e.Model.DType
}

// sourceOf says where a bundle came from: what the store recorded for a packed or imported
// one, "pulled" and how for one pulled by reference (whose name is the reference).
func sourceOf(e store.Entry) string {
	switch {
	case e.Source != "":
		return e.Source
	case e.Reference == "":
		return "-"
	case e.Transfer != "":
		return "pulled (" + e.Transfer + ")"
	}
	return "pulled"
}

// shortID is the digest's first 12 hex digits, as ollama and docker show image ids.
func shortID(digest string) string {
	h := strings.TrimPrefix(digest, "sha256:")
	return h[:min(12, len(h))]
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
