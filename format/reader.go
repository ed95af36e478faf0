package format

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
)

// Bundle is an open .aneb file: its header, section table and manifest, all checked, and
// access to the sections' bytes. Its methods may be called from several goroutines at once,
// except Close, which must come after every other call has returned.
type Bundle struct {
	ra       io.ReaderAt // the file's bytes (over the mapping on the mmap path)
	data     []byte      // the read-only mapping, or nil on the ReaderAt path
	size     int64
	closer   func() error // unmaps or closes the file; nil for NewReader
	name     string       // the path given to Open, for messages; "" for NewReader
	closed   atomic.Bool
	header   Header
	sections []Section      // sorted by offset (then length, then table order)
	byName   map[string]int // index into sections
	manifest *Manifest
}

// NewReader reads a bundle of size bytes from r, which must stay usable until Close. It makes
// the same checks as Open; [Bundle.Bytes] copies section data into memory on this path.
func NewReader(r io.ReaderAt, size int64) (*Bundle, error) {
	b, err := parse(r, size, true)
	if err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	return b, nil
}

// readAt fills p from r at off. A short read is reported as truncation: the caller has
// already checked off+len(p) against the size the file claims to have.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		return sentinelErr(ErrTruncated, off+int64(n), "read %d of %d bytes", n, len(p))
	}
	return fmt.Errorf("read %d bytes at offset %d: %w", len(p), off, err)
}

// parse reads and checks the header, the section table and the manifest. checkRoot=false
// skips the root digest so that the fuzz test reaches the checks behind it.
func parse(r io.ReaderAt, size int64, checkRoot bool) (*Bundle, error) {
	if size < 0 {
		return nil, formatErr(0, "negative file size %d", size)
	}
	var hb [HeaderSize]byte
	if size < HeaderSize {
		n := int(size)
		if err := readAt(r, hb[:n], 0); err != nil {
			return nil, err
		}
		if m := min(n, len(Magic)); !bytes.Equal(hb[:m], []byte(Magic[:m])) {
			return nil, sentinelErr(ErrNotBundle, 0, "magic is %q, want %q", hb[:m], Magic)
		}
		return nil, sentinelErr(ErrTruncated, size, "file is %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	if err := readAt(r, hb[:], 0); err != nil {
		return nil, err
	}
	h, newer, err := decodeHeader(hb[:], size)
	if err != nil {
		return nil, err
	}

	// Bounds were checked by decodeHeader: both lengths are at most the file size and
	// below the limits, so these allocations are safe.
	table := make([]byte, h.TableLength)
	if err := readAt(r, table, h.TableOffset); err != nil {
		return nil, err
	}
	sections, err := decodeTable(table, &h, newer)
	if err != nil {
		return nil, err
	}
	manifest := make([]byte, h.ManifestLength)
	if err := readAt(r, manifest, h.ManifestOffset); err != nil {
		return nil, err
	}

	if checkRoot {
		var got [32]byte
		d := sha256.New()
		zeroed := hb
		clear(zeroed[offRootDigest : offRootDigest+32])
		d.Write(zeroed[:])
		d.Write(table)
		d.Write(manifest)
		d.Sum(got[:0])
		if got != h.RootDigest {
			return nil, sentinelErr(ErrDigest, offRootDigest,
				"header, section table and manifest hash to %s but the header's root digest is %s (the file was modified or damaged)",
				digestString(got), h.RootDigestString())
		}
	}

	m, err := decodeManifest(manifest, h.Minor)
	if err != nil {
		off := h.ManifestOffset
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			off += se.Offset
		}
		return nil, formatErr(off, "manifest is not valid JSON: %v", err)
	}
	if m.FormatVersion != h.Version() {
		return nil, formatErr(h.ManifestOffset, "manifest format_version is %q; the header says %s", m.FormatVersion, h.Version())
	}

	b := &Bundle{ra: r, size: size, header: h, sections: sections, manifest: m,
		byName: make(map[string]int, len(sections))}
	for i, s := range sections {
		b.byName[s.Name] = i
	}
	return b, nil
}

// decodeHeader decodes and checks the header against the file size. newer reports a minor
// version above MinorVersion, whose reserved fields this reader ignores.
func decodeHeader(b []byte, size int64) (h Header, newer bool, err error) {
	le := binary.LittleEndian
	if string(b[offMagic:offMagic+4]) != Magic {
		return h, false, sentinelErr(ErrNotBundle, offMagic, "magic is %q, want %q", b[offMagic:offMagic+4], Magic)
	}
	h.Major = le.Uint16(b[offMajor:])
	h.Minor = le.Uint16(b[offMinor:])
	if h.Major != MajorVersion {
		return h, false, sentinelErr(ErrVersion, offMajor,
			"the bundle has format version %s; this anepack reads version %d.x (up to %s): upgrade anepack or repack the model",
			h.Version(), MajorVersion, VersionString())
	}
	newer = h.Minor > MinorVersion
	h.Flags = le.Uint32(b[offFlags:])
	h.HeaderSize = le.Uint32(b[offHeaderSize:])
	h.SectionCount = le.Uint32(b[offCount:])
	copy(h.RootDigest[:], b[offRootDigest:offRootDigest+32])
	if h.HeaderSize != HeaderSize {
		return h, newer, formatErr(offHeaderSize, "header size is %d, want %d", h.HeaderSize, HeaderSize)
	}
	if !newer {
		if h.Flags != 0 {
			return h, newer, formatErr(offFlags, "header flags are %#x; version %s defines none", h.Flags, h.Version())
		}
		if v := le.Uint32(b[offReserved:]); v != 0 {
			return h, newer, formatErr(offReserved, "reserved header field is %#x, want 0", v)
		}
		if i := bytes.IndexFunc(b[offReserved2:HeaderSize], func(r rune) bool { return r != 0 }); i >= 0 {
			return h, newer, formatErr(int64(offReserved2+i), "reserved header bytes 96..127 are not zero")
		}
	}

	usize := uint64(size)
	fileSize := le.Uint64(b[offFileSize:])
	if fileSize > usize {
		return h, newer, sentinelErr(ErrTruncated, offFileSize, "the header says the file is %d bytes; it is %d", fileSize, size)
	}
	if fileSize < usize {
		return h, newer, formatErr(offFileSize, "the header says the file is %d bytes; it is %d (trailing bytes)", fileSize, size)
	}
	h.FileSize = size

	tableOff, tableLen := le.Uint64(b[offTableOff:]), le.Uint64(b[offTableLen:])
	switch {
	case tableOff < Align || tableOff%Align != 0:
		return h, newer, formatErr(offTableOff, "section table offset %d is not a multiple of %d after the header page", tableOff, Align)
	case tableOff > usize:
		return h, newer, formatErr(offTableOff, "section table offset %d is past the end of the %d-byte file", tableOff, size)
	case h.SectionCount > MaxSections:
		return h, newer, formatErr(offCount, "section count %d exceeds the limit of %d", h.SectionCount, MaxSections)
	case tableLen != uint64(h.SectionCount)*EntrySize:
		return h, newer, formatErr(offTableLen, "section table length %d is not %d sections * %d bytes", tableLen, h.SectionCount, EntrySize)
	case tableLen > usize-tableOff:
		return h, newer, formatErr(offTableLen, "section table [%d, %d+%d) runs past the end of the %d-byte file", tableOff, tableOff, tableLen, size)
	}
	h.TableOffset, h.TableLength = int64(tableOff), int64(tableLen)

	manOff, manLen := le.Uint64(b[offManifestOff:]), le.Uint64(b[offManifestLen:])
	switch {
	case manOff != tableOff+tableLen:
		return h, newer, formatErr(offManifestOff, "manifest offset %d is not right after the section table (%d)", manOff, tableOff+tableLen)
	case manLen != usize-manOff:
		return h, newer, formatErr(offManifestLen, "manifest length %d does not reach the end of the file (%d bytes from offset %d)", manLen, usize-manOff, manOff)
	case manLen == 0:
		return h, newer, formatErr(offManifestLen, "manifest is empty")
	case manLen > MaxManifestSize:
		return h, newer, formatErr(offManifestLen, "manifest length %d exceeds the limit of %d", manLen, MaxManifestSize)
	}
	h.ManifestOffset, h.ManifestLength = int64(manOff), int64(manLen)
	return h, newer, nil
}

// decodeTable decodes and checks the section table. Sections must lie between the header page
// and the table, start on 16 KiB boundaries, not overlap, and have unique names. The result
// is sorted by offset.
func decodeTable(table []byte, h *Header, newer bool) ([]Section, error) {
	le := binary.LittleEndian
	tableOff := uint64(h.TableOffset)
	secs := make([]Section, h.SectionCount)
	entryAt := make(map[string]int64, h.SectionCount) // name -> entry file offset, for messages
	for i := range secs {
		e := table[i*EntrySize : (i+1)*EntrySize]
		at := h.TableOffset + int64(i)*EntrySize
		kind := SectionKind(le.Uint32(e[entKind:]))
		flags := le.Uint32(e[entFlags:])
		off, length := le.Uint64(e[entOffset:]), le.Uint64(e[entLength:])
		nameLen := int(le.Uint16(e[entNameLen:]))
		if nameLen == 0 || nameLen > MaxNameLen {
			return nil, formatErr(at+entNameLen, "section table entry %d: name length %d, want 1..%d", i, nameLen, MaxNameLen)
		}
		name := string(e[entName : entName+nameLen])
		if err := checkName(name); err != nil {
			return nil, formatErr(at+entName, "section table entry %d: %v", i, err)
		}
		if j := bytes.IndexFunc(e[entName+nameLen:], func(r rune) bool { return r != 0 }); j >= 0 {
			return nil, formatErr(at+int64(entName+nameLen+j), "section table entry %d (%q): bytes after the name are not zero", i, name)
		}
		switch {
		case kind == 0 || (!kind.Known() && !newer):
			return nil, formatErr(at+entKind, "section %q: unknown kind %d in a version %s bundle", name, uint32(kind), h.Version())
		case flags != 0 && !newer:
			return nil, formatErr(at+entFlags, "section %q: flags are %#x; version %s defines none", name, flags, h.Version())
		case off < Align:
			return nil, formatErr(at+entOffset, "section %q: offset %d is inside the header page (sections start at %d or later)", name, off, Align)
		case off%Align != 0:
			return nil, formatErr(at+entOffset, "section %q: offset %d is not a multiple of %d", name, off, Align)
		case off > tableOff || length > tableOff-off:
			return nil, formatErr(at+entOffset, "section %q: [%d, %d+%d) is out of bounds: sections must end by the section table at %d", name, off, off, length, tableOff)
		}
		if _, dup := entryAt[name]; dup {
			return nil, formatErr(at+entName, "section table entry %d: duplicate section name %q", i, name)
		}
		entryAt[name] = at
		secs[i] = Section{Kind: kind, Flags: flags, Name: name, Offset: int64(off), Length: int64(length)}
		copy(secs[i].SHA256[:], e[entSHA256:entSHA256+32])
	}
	// Empty sections sort before a section starting at the same offset, so that only real
	// overlaps (a section starting before the previous one ends) are reported.
	slices.SortStableFunc(secs, func(a, b Section) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.Length, b.Length))
	})
	for i := 1; i < len(secs); i++ {
		prev, cur := secs[i-1], secs[i]
		if prev.End() > cur.Offset {
			return nil, formatErr(entryAt[cur.Name]+entOffset, "section %q [%d, %d) overlaps section %q [%d, %d)",
				cur.Name, cur.Offset, cur.End(), prev.Name, prev.Offset, prev.End())
		}
	}
	return secs, nil
}

// wrap prefixes err with the operation and the bundle's path; nil stays nil.
func (b *Bundle) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case b.name == "":
		return fmt.Errorf("format: %s: %w", op, err)
	}
	return fmt.Errorf("format: %s %s: %w", op, b.name, err)
}

// Header returns the bundle's header.
func (b *Bundle) Header() Header { return b.header }

// Sections returns the section table sorted by file offset. Sections of kinds this version
// does not know (from a newer minor version) are included with their numeric kind.
func (b *Bundle) Sections() []Section { return slices.Clone(b.sections) }

// Section returns the section called name.
func (b *Bundle) Section(name string) (Section, bool) {
	i, ok := b.byName[name]
	if !ok {
		return Section{}, false
	}
	return b.sections[i], true
}

// Manifest returns the decoded manifest. It is shared: callers must not modify it.
func (b *Bundle) Manifest() *Manifest { return b.manifest }

// Size returns the file size in bytes.
func (b *Bundle) Size() int64 { return b.size }

// lookup checks that s is a section of this bundle and that the bundle is open.
func (b *Bundle) lookup(s Section) error {
	if b.closed.Load() {
		return ErrClosed
	}
	i, ok := b.byName[s.Name]
	if !ok {
		return fmt.Errorf("format: no section %q in this bundle", s.Name)
	}
	if t := b.sections[i]; t.Offset != s.Offset || t.Length != s.Length || t.Kind != s.Kind || t.SHA256 != s.SHA256 {
		return fmt.Errorf("format: section %q does not match this bundle's table entry", s.Name)
	}
	return nil
}

// Bytes returns the section's bytes. On the mmap path (Open on Linux and macOS) this is a
// read-only slice of the mapping, without a copy, valid until Close; writing to it crashes
// the process. On the ReaderAt path the bytes are read into a new slice.
// The section's digest is not checked; see VerifySection.
func (b *Bundle) Bytes(s Section) ([]byte, error) {
	if err := b.lookup(s); err != nil {
		return nil, err
	}
	if b.data != nil {
		return b.data[s.Offset:s.End():s.End()], nil
	}
	if uint64(s.Length) > uint64(maxInt) {
		return nil, fmt.Errorf("format: section %q is %d bytes, too large for memory on this platform", s.Name, s.Length)
	}
	p := make([]byte, s.Length)
	if err := readAt(b.ra, p, s.Offset); err != nil {
		return nil, b.wrap("read", fmt.Errorf("section %q: %w", s.Name, err))
	}
	return p, nil
}

// SectionReader returns a reader of the section's bytes. For a Section that is not from this
// bundle it reads nothing; after Close its reads fail with ErrClosed.
func (b *Bundle) SectionReader(s Section) *io.SectionReader {
	if b.lookup(s) != nil && !b.closed.Load() {
		return io.NewSectionReader(b.guarded(), 0, 0)
	}
	return io.NewSectionReader(b.guarded(), s.Offset, s.Length)
}

// guarded returns a ReaderAt that fails after Close instead of touching an unmapped region.
func (b *Bundle) guarded() io.ReaderAt { return guardedReaderAt{b} }

type guardedReaderAt struct{ b *Bundle }

func (g guardedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if g.b.closed.Load() {
		return 0, ErrClosed
	}
	return g.b.ra.ReadAt(p, off)
}

// Close releases the mapping or the file. Slices returned by Bytes on the mmap path must not
// be used afterwards. Close is idempotent.
func (b *Bundle) Close() error {
	if b.closed.Swap(true) || b.closer == nil {
		return nil
	}
	return b.closer()
}

const maxInt = int(^uint(0) >> 1)
