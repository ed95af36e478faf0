package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/acquire"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/store"
)

// destination is where a pack goes: the file -o names (or <model name>.aneb), the local store
// (--store), or both.
type destination struct {
	// path is what pack.Options.Output gets.
	path string
	// st is set with --store.
	st *store.Store
	// temp is set when path is a work file in the store rather than a file the user asked for.
	temp bool
}

// planOutput decides where model's bundle goes and checks, before anything is downloaded or
// converted, that it can be written there: an existing file without --force, a directory that
// does not exist or cannot be written into are reported now, not after a long download.
func planOutput(model string, f *packFlags) (*destination, error) {
	d := &destination{path: f.output}
	if f.store {
		st, err := store.OpenDefault()
		if err != nil {
			return nil, err
		}
		st.Log = cli.Stderr()
		d.st = st
		if f.output == "" {
			tmp, err := os.CreateTemp(st.TempDir(), "pack-*.aneb")
			if err != nil {
				return nil, st.DiskError(err)
			}
			tmp.Close()
			d.path, d.temp = tmp.Name(), true
			return d, nil
		}
	}
	if d.path == "" {
		d.path = pack.DefaultOutput(defaultName(model))
	}
	return d, checkWritable(d.path, f.force)
}

// defaultName is the model name pack.Pack will use for model: the repo's name for a repo id,
// the directory's name for a checkpoint directory.
func defaultName(model string) string {
	if _, err := os.Stat(model); err != nil && hub.IsRepoID(model) {
		return path.Base(model)
	}
	if abs, err := filepath.Abs(model); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(model)
}

// checkWritable reports why out cannot be written: it exists (and force is not set) or is a
// directory, its directory does not exist or is not one, or a file cannot be created there.
func checkWritable(out string, force bool) error {
	if fi, err := os.Stat(out); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("output %s is a directory; expected a file path (-o DIR/name.aneb)", out)
		}
		if !force {
			return fmt.Errorf("output %s already exists; use --force to overwrite it", out)
		}
	}
	dir := filepath.Dir(out)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("output %s: the directory %s does not exist; create it first", out, dir)
	case err != nil:
		return fmt.Errorf("output %s: %w", out, err)
	case !fi.IsDir():
		return fmt.Errorf("output %s: %s is not a directory", out, dir)
	}
	// The bundle is written beside its target and renamed into place: try exactly that.
	probe, err := os.CreateTemp(dir, ".anepack-write-test-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("output %s: cannot write in %s: %w", out, dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// finish adds the packed bundle to the store when --store asked for it and says what was
// done; it returns what to print on stdout (the bundle's path, or its name in the store when
// only the store has it).
func (d *destination) finish(ctx context.Context, res *pack.Result, src *acquire.Source, quiet bool) (string, error) {
	if d.st == nil {
		return res.Path, nil
	}
	n, err := modelname.ForBundle(res.Manifest)
	if err != nil {
		return "", err
	}
	origin := src.Origin
	if origin == "" {
		origin, _ = filepath.Abs(src.Dir)
	}
	var s *acquire.Stored
	if d.temp {
		s, err = acquire.AddPacked(ctx, d.st, res.Path, res.Manifest, n, "packed "+origin, display(quiet))
	} else {
		s, err = acquire.AddFile(ctx, d.st, res.Path, res.Size, res.Manifest, n, "packed "+origin, display(quiet))
	}
	if err != nil {
		return "", err
	}
	if !quiet {
		fmt.Fprintf(cli.Stderr(), "stored as %s (run it with: anerun %s \"prompt\")\n", s.Entry.Reference, s.Entry.Reference)
	}
	if d.temp {
		return s.Entry.Reference, nil
	}
	return res.Path, nil
}

// abort removes the store's work file after a failed pack.
func (d *destination) abort() {
	if d.temp {
		os.Remove(d.path)
	}
}
