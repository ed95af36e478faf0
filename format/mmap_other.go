//go:build !(linux || darwin)

package format

import (
	"fmt"

	"github.com/anepack/anepack/internal/regfile"
)

// Open opens the bundle at path and checks its header, section table, manifest and root
// digest. On this platform the file is read through io.ReaderAt (Bytes copies); on Linux and
// macOS it is memory-mapped. Section digests are checked by VerifySection and Verify.
func Open(path string) (*Bundle, error) {
	b, err := openFile(path)
	if err != nil {
		return nil, fmt.Errorf("format: open %s: %w", path, err)
	}
	return b, nil
}

func openFile(path string) (*Bundle, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, unwrapOpen(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	b, err := parse(f, fi.Size(), true)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.closer = f.Close
	b.name = path
	return b, nil
}

// Lock would pin the mapping in memory; on this platform the bundle is not memory-mapped.
func (b *Bundle) Lock() error {
	return fmt.Errorf("format: lock %s: bundles are not memory-mapped on this platform", b.name)
}

// PlaceHuge would make the mapping resident; on this platform the bundle is not memory-mapped.
func (b *Bundle) PlaceHuge() (before, after int64, err error) {
	return 0, 0, fmt.Errorf("format: %s: bundles are not memory-mapped on this platform", b.name)
}
