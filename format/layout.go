package format

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"unicode/utf8"
)

// Sizes and constants of the container (see the package documentation for the layout).
const (
	Magic        = "ANEB" // first four bytes of every bundle
	MajorVersion = 1      // the major version written; newer majors are refused
	// MinorVersion is the minor version written. Each minor added to the one before:
	//   - 1.1: the manifest's ane section, "f16" program I/O (1.0 wrote "fp16"), the arch
	//     configs of several families;
	//   - 1.2: q8 and q4 weights with scales and offsets;
	//   - 1.3: the manifest lists the ANE programs under "programs" (1.0 to 1.2: "kernels").
	MinorVersion = 3
	HeaderSize   = 128   // bytes of the header at offset 0
	EntrySize    = 128   // bytes of one section table entry
	Align        = 16384 // sections and the table start on multiples of this (16 KiB pages)
	MaxNameLen   = 70    // longest section name, in bytes

	// MaxSections and MaxManifestSize bound what a reader accepts, so that a corrupt or
	// hostile header cannot make it allocate more than the file could reasonably need,
	// even through an io.ReaderAt whose claimed size is larger than its contents.
	MaxSections     = 1 << 20 // a 128 MiB table
	MaxManifestSize = 1 << 28 // 256 MiB of JSON
)

// Header field offsets, used by the encoder, the decoder and error messages.
const (
	offMagic       = 0
	offMajor       = 4
	offMinor       = 6
	offFlags       = 8
	offHeaderSize  = 12
	offTableOff    = 16
	offTableLen    = 24
	offCount       = 32
	offReserved    = 36
	offManifestOff = 40
	offManifestLen = 48
	offFileSize    = 56
	offRootDigest  = 64
	offReserved2   = 96
)

// Section table entry field offsets.
const (
	entKind    = 0
	entFlags   = 4
	entOffset  = 8
	entLength  = 16
	entSHA256  = 24
	entNameLen = 56
	entName    = 58
)

// SectionKind says what a section holds.
type SectionKind uint32

// The section kinds of version 1.0.
const (
	KindTensors   SectionKind = 1 // raw tensor data: norms, biases, embeddings
	KindBlob      SectionKind = 2 // an ANE BLOBFILE weight file (package blobfile)
	KindMIL       SectionKind = 3 // MIL program text
	KindTokenizer SectionKind = 4 // compiled tokenizer tables
	KindFile      SectionKind = 5 // an original source file kept verbatim, e.g. "file/tokenizer.json"
)

var kindNames = [...]string{
	KindTensors:   "tensors",
	KindBlob:      "blob",
	KindMIL:       "mil",
	KindTokenizer: "tokenizer",
	KindFile:      "file",
}

// Known reports whether k is one of the kinds of this version of the package.
func (k SectionKind) Known() bool {
	return k > 0 && int(k) < len(kindNames)
}

// String returns the kind's name ("tensors", "blob", "mil", "tokenizer", "file"), or
// "kind(N)" for a kind this version does not know.
func (k SectionKind) String() string {
	if k.Known() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint32(k))
}

// ParseSectionKind is the inverse of [SectionKind.String]: it accepts a kind name or "kind(N)".
func ParseSectionKind(s string) (SectionKind, error) {
	for k, name := range kindNames {
		if name != "" && name == s {
			return SectionKind(k), nil
		}
	}
	var n uint32
	if _, err := fmt.Sscanf(s, "kind(%d)", &n); err == nil && fmt.Sprintf("kind(%d)", n) == s {
		return SectionKind(n), nil
	}
	return 0, fmt.Errorf("format: unknown section kind %q (want tensors, blob, mil, tokenizer, file or kind(N))", s)
}

// Header is the decoded 128-byte header at offset 0 of a bundle.
type Header struct {
	Major, Minor   uint16
	Flags          uint32
	HeaderSize     uint32
	TableOffset    int64
	TableLength    int64
	SectionCount   uint32
	ManifestOffset int64
	ManifestLength int64
	FileSize       int64
	// RootDigest is sha256(header with this field zeroed || section table || manifest).
	RootDigest [32]byte
}

// Version returns "MAJOR.MINOR", e.g. "1.0".
func (h Header) Version() string { return fmt.Sprintf("%d.%d", h.Major, h.Minor) }

// RootDigestString returns the root digest as "sha256:<hex>".
func (h Header) RootDigestString() string { return digestString(h.RootDigest) }

// Section is one entry of the section table.
type Section struct {
	Kind   SectionKind
	Flags  uint32 // 0 in version 1.0
	Name   string
	Offset int64 // file offset of the first byte, a multiple of Align
	Length int64
	SHA256 [32]byte // digest of the section's bytes
}

// DigestString returns the section's digest as "sha256:<hex>".
func (s Section) DigestString() string { return digestString(s.SHA256) }

// End returns the offset just past the section's last byte.
func (s Section) End() int64 { return s.Offset + s.Length }

func digestString(d [32]byte) string { return "sha256:" + hex.EncodeToString(d[:]) }

// VersionString returns the version this package writes, "1.3".
func VersionString() string { return fmt.Sprintf("%d.%d", MajorVersion, MinorVersion) }

// checkName reports why name cannot be a section name, or nil.
func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("section name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("section name %q is %d bytes; at most %d allowed", name, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("section name %q is not valid UTF-8", name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return fmt.Errorf("section name %q contains a NUL byte", name)
		}
	}
	return nil
}

// alignUp rounds n up to the next multiple of Align. n must be non-negative.
func alignUp(n int64) int64 { return (n + Align - 1) &^ (Align - 1) }

// encodeHeader writes h into b[:HeaderSize] (the reserved bytes become zero).
func encodeHeader(b []byte, h *Header) {
	b = b[:HeaderSize]
	clear(b)
	le := binary.LittleEndian
	copy(b[offMagic:], Magic)
	le.PutUint16(b[offMajor:], h.Major)
	le.PutUint16(b[offMinor:], h.Minor)
	le.PutUint32(b[offFlags:], h.Flags)
	le.PutUint32(b[offHeaderSize:], h.HeaderSize)
	le.PutUint64(b[offTableOff:], uint64(h.TableOffset))
	le.PutUint64(b[offTableLen:], uint64(h.TableLength))
	le.PutUint32(b[offCount:], h.SectionCount)
	le.PutUint64(b[offManifestOff:], uint64(h.ManifestOffset))
	le.PutUint64(b[offManifestLen:], uint64(h.ManifestLength))
	le.PutUint64(b[offFileSize:], uint64(h.FileSize))
	copy(b[offRootDigest:], h.RootDigest[:])
}

// encodeEntry writes s into b[:EntrySize]. The name must have passed checkName.
func encodeEntry(b []byte, s *Section) {
	b = b[:EntrySize]
	clear(b)
	le := binary.LittleEndian
	le.PutUint32(b[entKind:], uint32(s.Kind))
	le.PutUint32(b[entFlags:], s.Flags)
	le.PutUint64(b[entOffset:], uint64(s.Offset))
	le.PutUint64(b[entLength:], uint64(s.Length))
	copy(b[entSHA256:], s.SHA256[:])
	le.PutUint16(b[entNameLen:], uint16(len(s.Name)))
	copy(b[entName:], s.Name)
}
