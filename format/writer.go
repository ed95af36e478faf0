package format

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// writeBufferSize is the Writer's buffer: large enough that a streamed tensor reaches the disk
// in few system calls, small enough not to matter next to the model.
const writeBufferSize = 1 << 20

// zeroPage is the source of all padding.
var zeroPage [Align]byte

// Writer writes a bundle by streaming sections into a temporary file next to the target path
// and renaming it onto the target in Commit. It never holds section data in memory beyond its
// 1 MiB buffer.
//
// Use: Create, then for each section Begin + writes + End (or Add), then Commit; call Abort on
// every error path (defer w.Abort() is fine: after a successful Commit it does nothing).
//
// A Writer is used by one goroutine, with one exception: Abort may be called from any
// goroutine at any time, also while another goroutine is inside a section write, End or
// Commit (that is what [AbortOnSignal] does). Abort closes and removes the temporary file, so
// the in-flight write fails with an error wrapping [ErrAborted], and a Commit that has not yet
// renamed the file fails too. If Commit has already renamed the file, Abort leaves the bundle
// in place and returns nil.
type Writer struct {
	path string   // the target
	tmp  string   // the temporary file's path
	f    *os.File // the temporary file; Close is safe to race with Write
	bw   *bufio.Writer
	off  int64 // bytes written to bw so far (the file offset of the next byte)

	sections []Section
	names    map[string]bool
	open     *sectionWriter // the section between Begin and End, or nil
	err      error          // the first I/O error; every later call returns it

	aborted   atomic.Bool // set by Abort; checked on every write
	committed atomic.Bool // set by Commit after the rename
	header    Header      // the committed header, written before committed is set

	mu sync.Mutex // orders Commit's rename against Abort's removal
}

// Create starts a bundle that will be written to path. The data goes to a new temporary file
// ".<name>.tmp-*" in path's directory (created exclusively), which Commit renames onto path,
// replacing any file there. The directory must exist.
func Create(path string) (*Writer, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if base == "." || base == string(filepath.Separator) || path == "" {
		return nil, fmt.Errorf("format: create %q: not a file name", path)
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("format: create %s: output directory %s does not exist", path, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("format: create %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("format: create %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("format: create %s: is a directory", path)
	}
	// Temporary files that killed processes left here would otherwise stay forever.
	RemoveStaleTemps(path)
	f, err := os.CreateTemp(dir, tempPattern(base))
	if err != nil {
		return nil, fmt.Errorf("format: create %s: %w", path, err)
	}
	if err := lockTemp(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("format: create %s: locking %s: %w", path, f.Name(), err)
	}
	w := &Writer{
		path:  path,
		tmp:   f.Name(),
		f:     f,
		bw:    bufio.NewWriterSize(f, writeBufferSize),
		names: make(map[string]bool),
	}
	// The header page is written as zeros now and overwritten by Commit.
	if err := w.write(zeroPage[:]); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// usable returns the error that stops any further writing, or nil.
func (w *Writer) usable() error {
	if w.aborted.Load() {
		return fmt.Errorf("format: %s: %w", w.path, ErrAborted)
	}
	if w.committed.Load() {
		return fmt.Errorf("format: %s: %w", w.path, ErrCommitted)
	}
	return w.err
}

// fail records the first I/O error; after an Abort the error says so.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		if w.aborted.Load() {
			err = ErrAborted
		}
		w.err = fmt.Errorf("format: write %s: %w", w.path, err)
	}
	return w.err
}

// write sends p to the file through the buffer.
func (w *Writer) write(p []byte) error {
	if w.aborted.Load() {
		return w.fail(ErrAborted)
	}
	n, err := w.bw.Write(p)
	w.off += int64(n)
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// pad writes zeros up to the next multiple of Align.
func (w *Writer) pad(align int64) error {
	for n := (align - w.off%align) % align; n > 0; {
		k := min(n, int64(len(zeroPage)))
		if err := w.write(zeroPage[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Begin starts a section of the given kind and name at the next 16 KiB boundary and returns
// the writer for its bytes, valid until End. The name must be 1 to MaxNameLen bytes of UTF-8
// without NUL and not used by an earlier section.
func (w *Writer) Begin(kind SectionKind, name string) (io.Writer, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	if w.open != nil {
		return nil, fmt.Errorf("format: begin section %q: section %q is still open (call End first)", name, w.open.sec.Name)
	}
	if !kind.Known() {
		return nil, fmt.Errorf("format: begin section %q: %v is not a section kind of version %s", name, kind, VersionString())
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("format: begin section: %w", err)
	}
	if w.names[name] {
		return nil, fmt.Errorf("format: begin section %q: a section with this name was already written", name)
	}
	if err := w.pad(Align); err != nil {
		return nil, err
	}
	w.names[name] = true
	w.open = &sectionWriter{w: w, h: sha256.New(), sec: Section{Kind: kind, Name: name, Offset: w.off}}
	return w.open, nil
}

// End closes the open section and returns its table entry (offset, length, sha256).
func (w *Writer) End() (Section, error) {
	if err := w.usable(); err != nil {
		return Section{}, err
	}
	sw := w.open
	if sw == nil {
		return Section{}, errors.New("format: End called with no open section")
	}
	w.open = nil
	sw.done = true
	sw.sec.Length = w.off - sw.sec.Offset
	sw.h.Sum(sw.sec.SHA256[:0])
	w.sections = append(w.sections, sw.sec)
	return sw.sec, nil
}

// Add writes a whole section from memory: Begin, one write, End.
func (w *Writer) Add(kind SectionKind, name string, data []byte) (Section, error) {
	sw, err := w.Begin(kind, name)
	if err != nil {
		return Section{}, err
	}
	if _, err := sw.Write(data); err != nil {
		return Section{}, err
	}
	return w.End()
}

// Commit finishes the bundle: it pads to 16 KiB, appends the section table and m as indented
// JSON, writes the header with the root digest, fsyncs the file, renames it onto the target
// path and fsyncs the directory. It returns the header. m.FormatVersion is written as
// "1.0" when empty and must be "1.0" otherwise. The file is made readable by everyone (0644).
//
// Commit is idempotent: after a successful Commit it returns the same header again. After a
// failed Commit, call Abort to remove the temporary file.
func (w *Writer) Commit(m *Manifest) (Header, error) {
	if w.committed.Load() {
		return w.header, nil
	}
	if err := w.usable(); err != nil {
		return Header{}, err
	}
	if w.open != nil {
		return Header{}, fmt.Errorf("format: commit %s: section %q is still open (call End first)", w.path, w.open.sec.Name)
	}
	if m == nil {
		return Header{}, fmt.Errorf("format: commit %s: no manifest", w.path)
	}
	mc := *m
	if mc.FormatVersion == "" {
		mc.FormatVersion = VersionString()
	} else if mc.FormatVersion != VersionString() {
		return Header{}, fmt.Errorf("format: commit %s: manifest format_version is %q; this writer writes %q", w.path, mc.FormatVersion, VersionString())
	}
	js, err := json.MarshalIndent(&mc, "", "  ")
	if err != nil {
		return Header{}, fmt.Errorf("format: commit %s: encode manifest: %w", w.path, err)
	}
	js = append(js, '\n')
	if len(w.sections) > MaxSections || len(js) > MaxManifestSize {
		return Header{}, fmt.Errorf("format: commit %s: %d sections and a %d-byte manifest exceed the limits (%d, %d)",
			w.path, len(w.sections), len(js), MaxSections, MaxManifestSize)
	}

	if err := w.pad(Align); err != nil {
		return Header{}, err
	}
	h := Header{
		Major:        MajorVersion,
		Minor:        MinorVersion,
		HeaderSize:   HeaderSize,
		TableOffset:  w.off,
		TableLength:  int64(len(w.sections)) * EntrySize,
		SectionCount: uint32(len(w.sections)),
	}
	h.ManifestOffset = h.TableOffset + h.TableLength
	h.ManifestLength = int64(len(js))
	h.FileSize = h.ManifestOffset + h.ManifestLength

	// The root digest covers the header (digest zeroed), the table and the manifest, in file
	// order, so it is computed while they are written.
	var hb [HeaderSize]byte
	encodeHeader(hb[:], &h)
	root := sha256.New()
	root.Write(hb[:])
	var eb [EntrySize]byte
	for i := range w.sections {
		encodeEntry(eb[:], &w.sections[i])
		root.Write(eb[:])
		if err := w.write(eb[:]); err != nil {
			return Header{}, err
		}
	}
	root.Write(js)
	if err := w.write(js); err != nil {
		return Header{}, err
	}
	root.Sum(h.RootDigest[:0])
	encodeHeader(hb[:], &h)

	if err := w.bw.Flush(); err != nil {
		return Header{}, w.fail(err)
	}
	if _, err := w.f.WriteAt(hb[:], 0); err != nil {
		return Header{}, w.fail(err)
	}
	if err := w.f.Chmod(0o644); err != nil && goruntime.GOOS != "windows" {
		return Header{}, w.fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return Header{}, w.fail(err)
	}
	if err := w.f.Close(); err != nil {
		return Header{}, w.fail(err)
	}

	w.mu.Lock()
	if w.aborted.Load() {
		w.mu.Unlock()
		return Header{}, w.fail(ErrAborted)
	}
	if err := os.Rename(w.tmp, w.path); err != nil {
		w.mu.Unlock()
		return Header{}, w.fail(err)
	}
	w.header = h
	w.committed.Store(true)
	w.mu.Unlock()

	if err := syncDir(filepath.Dir(w.path)); err != nil {
		return h, fmt.Errorf("format: commit %s: the bundle is in place but its directory could not be synced: %w", w.path, err)
	}
	return h, nil
}

// Abort discards the bundle: it closes and removes the temporary file. It does nothing after
// a successful Commit or a previous Abort, and may be called from any goroutine (see Writer).
func (w *Writer) Abort() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.committed.Load() || w.aborted.Load() {
		return nil
	}
	w.aborted.Store(true)
	// Close first: Windows cannot remove an open file. A concurrent Write then fails.
	if err := w.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		os.Remove(w.tmp)
		return fmt.Errorf("format: abort %s: %w", w.path, err)
	}
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("format: abort %s: %w", w.path, err)
	}
	return nil
}

// syncDir makes a rename in dir durable. Windows cannot open a directory for syncing; it
// makes renames durable on its own.
func syncDir(dir string) error {
	if goruntime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// sectionWriter is the io.Writer returned by Begin: it hashes and buffers the section's bytes.
type sectionWriter struct {
	w    *Writer
	h    hash.Hash
	sec  Section
	done bool // End was called
}

func (sw *sectionWriter) check() error {
	if sw.done {
		return fmt.Errorf("format: write to section %q after End", sw.sec.Name)
	}
	return sw.w.usable()
}

// Write hashes p and buffers it for the file.
func (sw *sectionWriter) Write(p []byte) (int, error) {
	if err := sw.check(); err != nil {
		return 0, err
	}
	sw.h.Write(p)
	before := sw.w.off
	err := sw.w.write(p)
	return int(sw.w.off - before), err
}

// ReadFrom copies r into the section by reading straight into the write buffer, which saves
// a copy when io.Copy streams a file into a section.
func (sw *sectionWriter) ReadFrom(r io.Reader) (int64, error) {
	if err := sw.check(); err != nil {
		return 0, err
	}
	w := sw.w
	var total int64
	for {
		if w.bw.Available() == 0 {
			if err := w.bw.Flush(); err != nil {
				return total, w.fail(err)
			}
		}
		buf := w.bw.AvailableBuffer()
		n, rerr := r.Read(buf[:cap(buf)])
		if n > 0 {
			sw.h.Write(buf[:n])
			if err := w.write(buf[:n]); err != nil {
				return total, err
			}
			total += int64(n)
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, fmt.Errorf("format: section %q: read: %w", sw.sec.Name, rerr)
		}
	}
}
