package acquire

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/store"
)

// Stored is a bundle the store holds under a name.
type Stored struct {
	// Entry is what the store records: the name, digest, size, model summary and source.
	Entry store.Entry
	// Path is the verified bundle in the store.
	Path string
}

// FetchAndPack is what `anerun Org/Name` does the first time: it downloads what packing
// needs of the repo (through c, into the Hugging Face cache, or from it), packs it with
// n's weight type and adds the bundle to st as n, showing each step on d.
func FetchAndPack(ctx context.Context, st *store.Store, c *hub.Client, n modelname.Name, revision string, d Display) (*Stored, error) {
	if !n.IsRepo() {
		return nil, fmt.Errorf("%s is not a Hugging Face repo id (Org/Name)", n.Model)
	}
	start := time.Now()
	snap, err := Download(ctx, c, n.Model, revision, hub.PackFilter, d)
	if err != nil {
		return nil, err
	}
	src, err := FromSnapshot(snap)
	if err != nil {
		return nil, err
	}
	return PackSource(ctx, st, src, n, start, d)
}

// PackSource packs src with n's weight type into st as n and says so in one line on d.Log (the
// time counted from start).
func PackSource(ctx context.Context, st *store.Store, src *Source, n modelname.Name, start time.Time, d Display) (*Stored, error) {
	s, res, err := PackToStore(ctx, st, src, n, pack.Options{DType: n.DType()}, d)
	if err != nil {
		return nil, err
	}
	if d.Log != nil {
		m := res.Manifest
		fmt.Fprintf(d.Log, "stored %s: %s, %s weights, %s, in %.1fs\n", n, m.Model.Architecture, m.Model.DType, bytesize.Format(s.Entry.Size), time.Since(start).Seconds())
	}
	return s, nil
}

// PackToStore packs src with opts into the store's work area and adds the bundle to st as n:
// opts' Output, Force, Name, Provenance and KnownDigests are set from src, and Progress and
// Warn, when unset, report on d. Nothing is left in the work area on failure.
func PackToStore(ctx context.Context, st *store.Store, src *Source, n modelname.Name, opts pack.Options, d Display) (*Stored, *pack.Result, error) {
	f, err := os.CreateTemp(st.TempDir(), "pack-*.aneb")
	if err != nil {
		return nil, nil, st.DiskError(err)
	}
	tmp := f.Name()
	f.Close()
	opts.Output, opts.Force = tmp, true
	opts.Name, opts.Provenance, opts.KnownDigests = src.Name, src.Provenance, src.KnownDigests
	var prog Task
	if opts.Progress == nil {
		opts.Progress = func(done, total int64) {
			if prog == nil {
				prog = d.task("converting weights", total)
			}
			prog.Set(done, total)
		}
	}
	if opts.Warn == nil {
		opts.Warn = func(msg string) {
			if d.Log != nil {
				fmt.Fprintln(d.Log, "warning:", msg)
			}
		}
	}
	res, err := pack.Pack(ctx, src.Dir, opts)
	if prog != nil {
		prog.Finish()
	}
	if err != nil {
		os.Remove(tmp)
		return nil, nil, err
	}
	s, err := AddPacked(ctx, st, res.Path, res.Manifest, n, "packed "+src.Origin, d)
	if err != nil {
		return nil, nil, err
	}
	return s, res, nil
}

// AddPacked adds tmp, a bundle just packed into the store's work area, to st as n, with
// source as its origin for listings. The hash the store names it by is shown on d as
// "verifying".
func AddPacked(ctx context.Context, st *store.Store, tmp string, m *format.Manifest, n modelname.Name, source string, d Display) (*Stored, error) {
	fi, err := os.Stat(tmp)
	if err != nil {
		return nil, err
	}
	prog := d.task("verifying", fi.Size())
	e, p, err := st.Add(ctx, tmp, entryFor(m, n, source), prog.Set)
	prog.Finish()
	if err != nil {
		return nil, err
	}
	return &Stored{Entry: e, Path: p}, nil
}

// entryFor is the store entry of a bundle with manifest m named n (its digest and size are
// filled in when it is added).
func entryFor(m *format.Manifest, n modelname.Name, source string) store.Entry {
	return store.Entry{Reference: n.String(), Source: source, Model: store.Model{Name: m.Model.Name,
		Architecture: m.Model.Architecture, DType: m.Model.DType, Parameters: m.Model.Parameters}}
}

// Find returns the bundle st holds as n, verified (progress follows a hash, when one is needed;
// a bundle verified before and unchanged since is not hashed again). The error wraps
// store.ErrNotFound when the store has no such name; a corrupt bundle is deleted and reported
// as a *store.CorruptError.
func Find(ctx context.Context, st *store.Store, n modelname.Name, progress func(done, total int64)) (*Stored, error) {
	e, p, err := st.Get(ctx, n.String(), progress)
	if err != nil {
		return nil, err
	}
	return &Stored{Entry: e, Path: p}, nil
}
