package format

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
)

// hashChunk is how much is hashed between progress reports.
const hashChunk = 4 << 20

// maxVerifyWorkers bounds the goroutines hashing sections in parallel; sha256 runs at about
// 2 GB/s per core, so a few cores saturate a fast SSD.
const maxVerifyWorkers = 8

// VerifySection checks that the section's bytes hash to the digest in the section table.
// A mismatch is a *FormatError wrapping ErrDigest that names the section.
func (b *Bundle) VerifySection(s Section) error {
	if err := b.lookup(s); err != nil {
		return err
	}
	return b.wrap("verify", b.verifySection(s, &progressMeter{}))
}

func (b *Bundle) verifySection(s Section, pm *progressMeter) error {
	got, err := b.hashRange(s.Offset, s.Length, pm)
	if err != nil {
		return fmt.Errorf("section %q: %w", s.Name, err)
	}
	if got != s.SHA256 {
		return sentinelErr(ErrDigest, s.Offset, "section %q (%v, %d bytes) hashes to %s but the section table says %s",
			s.Name, s.Kind, s.Length, digestString(got), s.DigestString())
	}
	return nil
}

// Verify checks every section's digest and that all padding (the rest of the header page and
// the gaps before each section and before the table) is zero. Together with the root digest
// checked by Open, this proves the whole file is the one its root digest names.
//
// Sections are hashed on several goroutines. progress, if not nil, is called first with the
// bytes Open already checked, then after each chunk of at most 4 MiB, with the bytes checked
// so far and the file size; the calls never overlap, done never decreases and the last call
// has done == total. Every mismatch is reported, each naming its section; the error
// wraps ErrDigest.
func (b *Bundle) Verify(progress func(done, total int64)) error {
	if b.closed.Load() {
		return ErrClosed
	}
	// The header, table and manifest were checked by Open; the padding and the sections fill
	// the rest of the file exactly, so progress ends at the file size.
	gaps := b.gaps()
	pm := &progressMeter{fn: progress, total: b.size}
	pm.add(HeaderSize + b.header.TableLength + b.header.ManifestLength)

	var errs []error
	for _, g := range gaps {
		if err := b.checkZero(g, pm); err != nil {
			errs = append(errs, err)
		}
	}

	// Largest sections first, so that one big section does not start last.
	order := make([]int, len(b.sections))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(b.sections[j].Length, b.sections[i].Length) })
	results := make([]error, len(b.sections))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), maxVerifyWorkers, len(order)) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= len(order) {
					return
				}
				i := order[k]
				results[i] = b.verifySection(b.sections[i], pm)
			}
		})
	}
	wg.Wait()
	for _, err := range results { // in file order
		if err != nil {
			errs = append(errs, err)
		}
	}
	return b.wrap("verify", errors.Join(errs...))
}

// FileDigest returns the sha256 of the whole file as "sha256:<hex>", the name registries and
// the local store give a bundle. progress is called as for Verify, with total the file size.
func (b *Bundle) FileDigest(progress func(done, total int64)) (string, error) {
	if b.closed.Load() {
		return "", ErrClosed
	}
	sum, err := b.hashRange(0, b.size, &progressMeter{fn: progress, total: b.size})
	if err != nil {
		return "", b.wrap("file digest", err)
	}
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// progressMeter serialises calls to a caller's progress function.
type progressMeter struct {
	fn          func(done, total int64)
	mu          sync.Mutex
	done, total int64
}

func (p *progressMeter) add(n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(p.done, p.total)
}

// hashRange returns the sha256 of the file's bytes [off, off+n), which the caller has
// checked to lie inside the file.
func (b *Bundle) hashRange(off, n int64, pm *progressMeter) (sum [32]byte, err error) {
	defer catchFault(&err, debug.SetPanicOnFault(true))
	h := sha256.New()
	if b.data != nil {
		for n > 0 {
			k := min(n, hashChunk)
			h.Write(b.data[off : off+k])
			off, n = off+k, n-k
			pm.add(k)
		}
	} else {
		buf := make([]byte, min(n, 1<<20))
		for n > 0 {
			p := buf[:min(n, int64(len(buf)))]
			if err := readAt(b.ra, p, off); err != nil {
				return sum, err
			}
			h.Write(p)
			off, n = off+int64(len(p)), n-int64(len(p))
			pm.add(int64(len(p)))
		}
	}
	h.Sum(sum[:0])
	return sum, nil
}

// gap is a run of bytes that must be zero.
type gap struct {
	off, n int64
	after  string // what precedes the gap, for messages
}

// gaps lists the padding of the file: the rest of the header page, the bytes between
// sections and the bytes between the last section and the table.
func (b *Bundle) gaps() []gap {
	var gs []gap
	pos, after := int64(HeaderSize), "the header"
	add := func(end int64) {
		if end > pos {
			gs = append(gs, gap{pos, end - pos, after})
		}
	}
	for _, s := range b.sections { // sorted by offset, not overlapping
		add(s.Offset)
		if s.End() >= pos {
			pos, after = s.End(), fmt.Sprintf("section %q", s.Name)
		}
	}
	add(b.header.TableOffset)
	return gs
}

// checkZero reports the first non-zero byte of g as a *FormatError wrapping ErrDigest.
func (b *Bundle) checkZero(g gap, pm *progressMeter) (err error) {
	defer catchFault(&err, debug.SetPanicOnFault(true))
	var buf []byte
	if b.data == nil {
		buf = make([]byte, min(g.n, Align))
	}
	for off, end := g.off, g.off+g.n; off < end; {
		k := min(end-off, Align)
		var p []byte
		if b.data != nil {
			p = b.data[off : off+k]
		} else {
			p = buf[:k]
			if err := readAt(b.ra, p, off); err != nil {
				return err
			}
		}
		if !bytes.Equal(p, zeroPage[:k]) {
			i := bytes.IndexFunc(p, func(r rune) bool { return r != 0 })
			return sentinelErr(ErrDigest, off+int64(i), "non-zero byte in the padding after %s (bytes %d..%d must be zero)",
				g.after, g.off, g.off+g.n-1)
		}
		off += k
		pm.add(k)
	}
	return nil
}

// catchFault, deferred with the previous SetPanicOnFault setting as old, turns a memory fault
// while reading the mapping (the file was truncated under us) into an error.
func catchFault(err *error, old bool) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		*err = fmt.Errorf("memory fault at %#x reading the mapped bundle: the file was truncated or changed while open", f.Addr())
		return
	}
	panic(r)
}
