package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/remote"
	"github.com/anepack/anepack/store"
)

// newRmCmd is `anerun rm REF|DIGEST...`: remove bundles from the local store.
func newRmCmd() *cobra.Command {
	var partial bool
	cmd := &cobra.Command{
		Use:   "rm NAME|REF|ID...",
		Short: "Remove models and bundles from the local store",
		Long: `rm removes names (Org/Name[:tag], f16 when no tag is given) and references from the local
store; a bundle is deleted when no name refers to it any more. An ID (the digest as anerun list
shows it, sha256:<hex>, or a unique prefix of at least 6 hex digits such as 9ab1cb) removes the
bundle and every name of it. --partial deletes what interrupted pulls left for resuming.`,
		Example: `  anerun rm Qwen/Qwen2.5-0.5B-Instruct
  anerun rm Qwen/Qwen2.5-0.5B-Instruct:int4
  anerun rm oci://ghcr.io/me/qwen:0.5b
  anerun rm 9ab1cb4463ef
  anerun rm --partial`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !partial {
				return fmt.Errorf("missing NAME|REF|ID: what to remove (or --partial; anerun list shows the names and ids) (usage: %s)", cmd.UseLine())
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
				r, err := st.Remove(cmd.Context(), rmTarget(st, a))
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
					fmt.Fprintf(out, "freed %s\n", bytesize.Format(r.Freed))
				}
				if r.Kept > 0 {
					fmt.Fprintf(out, "%s stays on disk: another hard link holds it (the file it was imported from)\n", bytesize.Format(r.Kept))
				}
			}
			if partial {
				n, err := st.RemoveTemp()
				if err != nil {
					failed = append(failed, err.Error())
				} else {
					fmt.Fprintf(out, "deleted partial downloads: %s freed\n", bytesize.Format(n))
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

// rmTarget turns what the user typed into what the store removes: a reference in its canonical
// form, a name with its tag (f16 when none is given), or an id (hex digits, as anerun list
// shows them) as a digest prefix.
func rmTarget(st *store.Store, a string) string {
	if strings.HasPrefix(a, "sha256:") {
		return a
	}
	if r, err := remote.ParseRef(a); err == nil && r.IsRemote() {
		return r.String()
	}
	if _, err := st.Lookup(a); err == nil {
		return a
	}
	if n, ok, err := modelname.Parse(a, ""); ok && err == nil {
		if _, err := st.Lookup(n.String()); err == nil {
			return n.String()
		}
	}
	if len(a) >= 6 && strings.Trim(strings.ToLower(a), "0123456789abcdef") == "" {
		return "sha256:" + strings.ToLower(a)
	}
	return a
}
