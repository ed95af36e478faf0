package acquire

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/modelname"
	"github.com/anepack/anepack/store"
)

// Import adds the bundle file path to st, as name when it is not empty (a tag it gives must
// match the bundle's weight type; a missing one is taken from the bundle), else as NameFor
// says. The file is hard-linked into the store when it can be (no copy, no extra space),
// copied otherwise; it is hashed once, shown on d as "verifying".
func Import(ctx context.Context, st *store.Store, path, name string, d Display) (*Stored, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	b, err := format.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("%s is not a bundle anerun can run: %w", path, err)
	}
	m := b.Manifest()
	size := b.Size()
	b.Close()
	n, err := modelname.ForBundle(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if name != "" {
		given, ok, err := modelname.Parse(name, "")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("--name %q: expected Org/Name or name, optionally with :tag (letters, digits, '-', '_' and '.')", name)
		}
		if strings.Contains(name, ":") && given.Tag != n.Tag {
			return nil, fmt.Errorf("--name %s: the bundle holds %s weights, so its tag is :%s", name, m.Model.DType, n.Tag)
		}
		n.Model = given.Model
	}
	return AddFile(ctx, st, abs, size, m, n, "imported "+abs, d)
}

// AddFile adds the bundle file path (outside the store; size bytes, manifest m) to st as n,
// with source as its origin for listings: hard-linked when it can be, copied otherwise, and
// hashed once on the way in, shown on d as "verifying".
func AddFile(ctx context.Context, st *store.Store, path string, size int64, m *format.Manifest, n modelname.Name, source string, d Display) (*Stored, error) {
	prog := d.task("verifying", size)
	e, p, err := st.Import(ctx, path, entryFor(m, n, source), prog.Set)
	prog.Finish()
	if err != nil {
		return nil, err
	}
	return &Stored{Entry: e, Path: p}, nil
}
