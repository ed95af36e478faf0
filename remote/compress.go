package remote

import "fmt"

// CompressMode chooses whether an OCI push sends the zstd-frames layer.
type CompressMode int

const (
	// CompressAuto compresses, and pushes the compressed layer when it is more than
	// MinSaving smaller than the bundle; otherwise the plain bundle.
	CompressAuto CompressMode = iota
	// CompressNever pushes the plain bundle.
	CompressNever
	// CompressAlways pushes the compressed layer whatever it saves.
	CompressAlways
)

// MinSaving is the fraction of the size the compressed layer must save to be pushed in
// CompressAuto mode: below it, decompressing on every pull costs more than the bytes saved.
const MinSaving = 0.10

// ParseCompressMode reads "auto", "never" (or "none", "off") and "always" (or "zstd").
func ParseCompressMode(s string) (CompressMode, error) {
	switch s {
	case "", "auto":
		return CompressAuto, nil
	case "never", "none", "off":
		return CompressNever, nil
	case "always", "zstd":
		return CompressAlways, nil
	}
	return 0, fmt.Errorf("--compress %q: expected auto, never or always", s)
}

func (m CompressMode) String() string {
	switch m {
	case CompressAuto:
		return "auto"
	case CompressNever:
		return "never"
	case CompressAlways:
		return "always"
	}
	return fmt.Sprintf("CompressMode(%d)", int(m))
}
