package remote

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/internal/transfer"
)

// A compressed layer ("zstd frames") is the bundle cut into pieces of at most FrameSize
// bytes, each compressed on its own as one zstd frame (with its content checksum), the
// frames concatenated. The frame index (FrameIndex, in the artifact's config) lists each
// frame's plain and compressed length, so a pull fetches frames with parallel range requests,
// decodes them in parallel, and resumes frame by frame. Pieces never straddle two sections of
// different kinds: the weight sections (tensors and blobs) go through a byte split first
// (all low bytes of the 2-byte fp16 values, then all high bytes; 4 planes for f32), which
// lets zstd's entropy coder see the exponent bytes together (0.76 → 0.66 for fp16 weights
// converted from bf16; docs/distribution.md, "Compression").

// Filters applied to a piece before compression: the byte-split width.
const (
	filterNone   byte = 0
	filterSplit2 byte = 2
	filterSplit4 byte = 4
)

// maxFrame bounds a frame's plain size on pull, so a hostile index cannot make a pull
// allocate without limit.
const maxFrame = 64 << 20

// FrameIndex describes a compressed layer.
type FrameIndex struct {
	// Algorithm is "zstd".
	Algorithm string `json:"algorithm"`
	// Frames are [plain length, compressed length, filter] per frame, in order; offsets are
	// the running sums.
	Frames [][3]int64 `json:"frames"`
}

// check validates an index against the bundle and layer sizes.
func (ix *FrameIndex) check(plain, comp int64) error {
	if ix.Algorithm != "zstd" {
		return fmt.Errorf("frame index: algorithm %q, expected zstd", ix.Algorithm)
	}
	var p, c int64
	for i, f := range ix.Frames {
		if f[0] <= 0 || f[0] > maxFrame || f[1] <= 0 || f[1] > maxFrame+maxFrame/8 {
			return fmt.Errorf("frame index: frame %d: lengths %d/%d out of range (1..%d)", i, f[0], f[1], maxFrame)
		}
		if f[2] != int64(filterNone) && f[2] != int64(filterSplit2) && f[2] != int64(filterSplit4) {
			return fmt.Errorf("frame index: frame %d: unknown filter %d (expected 0, 2 or 4)", i, f[2])
		}
		p += f[0]
		c += f[1]
	}
	if p != plain || c != comp {
		return fmt.Errorf("frame index: frames add up to %d plain / %d compressed bytes, expected %d / %d", p, c, plain, comp)
	}
	return nil
}

// units turns the index into transfer units.
func (ix *FrameIndex) units() []*transfer.Unit {
	us := make([]*transfer.Unit, len(ix.Frames))
	var p, c int64
	for i, f := range ix.Frames {
		us[i] = &transfer.Unit{Off: p, N: f[0], SOff: c, SN: f[1], Frame: true, Filter: byte(f[2])}
		p += f[0]
		c += f[1]
	}
	return us
}

// piece is a range of the bundle compressed as one frame.
type piece struct {
	off, n int64
	filter byte
}

// region is a stretch of the bundle with one filter; gaps (zero padding) fit any filter.
type region struct {
	off, n int64
	filter byte
	gap    bool
}

// planFrames cuts the bundle into pieces of at most frameSize bytes that never mix filters.
func planFrames(b *format.Bundle, frameSize int64) []piece {
	width := filterNone
	switch b.Manifest().Model.DType {
	case "f16":
		width = filterSplit2
	case "f32":
		width = filterSplit4
	}
	secs := b.Sections()
	sort.Slice(secs, func(i, j int) bool { return secs[i].Offset < secs[j].Offset })
	var regs []region
	pos := int64(0)
	for _, s := range secs {
		if s.Offset > pos {
			regs = append(regs, region{off: pos, n: s.Offset - pos, gap: true})
		}
		f := filterNone
		if s.Kind == format.KindTensors || s.Kind == format.KindBlob {
			f = width
		}
		if s.Length > 0 {
			regs = append(regs, region{off: s.Offset, n: s.Length, filter: f})
		}
		pos = max(pos, s.End())
	}
	if size := b.Size(); size > pos {
		regs = append(regs, region{off: pos, n: size - pos}) // section table and manifest
	}
	var out []piece
	var cur *piece
	for _, r := range regs {
		for r.n > 0 {
			if cur != nil && (r.gap || r.filter == cur.filter) && cur.n < frameSize {
				take := min(r.n, frameSize-cur.n)
				cur.n += take
				r.off += take
				r.n -= take
				continue
			}
			if cur != nil {
				out = append(out, *cur)
			}
			take := min(r.n, frameSize)
			cur = &piece{off: r.off, n: take, filter: r.filter}
			r.off += take
			r.n -= take
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// split writes src into dst as w byte planes (dst[j*m+i] = src[i*w+j]); a tail shorter than
// one element is copied as is.
func split(dst, src []byte, w int) {
	if w <= 1 {
		copy(dst, src)
		return
	}
	m := len(src) / w
	if w == 2 {
		lo, hi := dst[:m], dst[m:2*m]
		i := 0
		// 8 values at a time: gather the even and the odd bytes of two words.
		for ; i+8 <= m; i += 8 {
			a := binary.LittleEndian.Uint64(src[2*i:])
			b := binary.LittleEndian.Uint64(src[2*i+8:])
			binary.LittleEndian.PutUint32(lo[i:], gather(a))
			binary.LittleEndian.PutUint32(lo[i+4:], gather(b))
			binary.LittleEndian.PutUint32(hi[i:], gather(a>>8))
			binary.LittleEndian.PutUint32(hi[i+4:], gather(b>>8))
		}
		for ; i < m; i++ {
			lo[i] = src[2*i]
			hi[i] = src[2*i+1]
		}
	} else {
		for j := range w {
			plane := dst[j*m : (j+1)*m]
			for i := range m {
				plane[i] = src[i*w+j]
			}
		}
	}
	copy(dst[m*w:], src[m*w:])
}

// unsplit inverts split.
func unsplit(dst, src []byte, w int) {
	if w <= 1 {
		copy(dst, src)
		return
	}
	m := len(src) / w
	if w == 2 {
		lo, hi := src[:m], src[m:2*m]
		i := 0
		// 8 values at a time: spread the low and high bytes and interleave them.
		for ; i+8 <= m; i += 8 {
			l := binary.LittleEndian.Uint64(lo[i:])
			h := binary.LittleEndian.Uint64(hi[i:])
			binary.LittleEndian.PutUint64(dst[2*i:], spread(uint32(l))|spread(uint32(h))<<8)
			binary.LittleEndian.PutUint64(dst[2*i+8:], spread(uint32(l>>32))|spread(uint32(h>>32))<<8)
		}
		for ; i < m; i++ {
			dst[2*i] = lo[i]
			dst[2*i+1] = hi[i]
		}
	} else {
		for j := range w {
			plane := src[j*m : (j+1)*m]
			for i := range m {
				dst[i*w+j] = plane[i]
			}
		}
	}
	copy(dst[m*w:], src[m*w:])
}

// spread moves byte k of x to byte 2k of the result (the odd bytes are zero).
func spread(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	return v
}

// gather is the inverse of spread: byte 2k of x to byte k of the result (odd bytes ignored).
func gather(x uint64) uint32 {
	x &= 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// CompressStats describes one compression of a bundle.
type CompressStats struct {
	Plain, Compressed int64
	Frames            int
	Elapsed           time.Duration
}

// Ratio is compressed / plain size.
func (s CompressStats) Ratio() float64 {
	if s.Plain == 0 {
		return 1
	}
	return float64(s.Compressed) / float64(s.Plain)
}

// MBps is the plain megabytes (10^6) compressed per second.
func (s CompressStats) MBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Plain) / 1e6 / s.Elapsed.Seconds()
}

// CompressBundle writes the bundle at path as zstd frames to w (see the package notes) using
// all CPUs, and returns the frame index. progress, if set, follows the plain bytes done.
func CompressBundle(ctx context.Context, path string, w io.Writer, frameSize int, progress func(done, total int64)) (*FrameIndex, CompressStats, error) {
	start := time.Now()
	b, err := format.Open(path)
	if err != nil {
		return nil, CompressStats{}, err
	}
	defer b.Close()
	if frameSize <= 0 {
		frameSize = DefaultFrameSize
	}
	pieces := planFrames(b, int64(frameSize))
	f, err := regfile.Open(path)
	if err != nil {
		return nil, CompressStats{}, err
	}
	defer f.Close()
	// Workers compress pieces in any order (EncodeAll runs on the calling goroutine, up to
	// the encoder's concurrency at once); the writer emits them in order.
	workers := runtime.GOMAXPROCS(0)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithAllLitEntropyCompression(true),
		zstd.WithEncoderCRC(true), zstd.WithEncoderConcurrency(workers))
	if err != nil {
		return nil, CompressStats{}, err
	}
	defer enc.Close()

	type job struct {
		i    int
		out  []byte
		err  error
		done chan struct{}
	}
	jobs := make([]*job, len(pieces))
	for i := range jobs {
		jobs[i] = &job{i: i, done: make(chan struct{})}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *job)
	var wg sync.WaitGroup
	// At most 2*workers frames wait in memory for the writer.
	slots := make(chan struct{}, 2*workers)
	for range workers {
		wg.Go(func() {
			in := make([]byte, frameSize)
			tmp := make([]byte, frameSize)
			for j := range next {
				p := pieces[j.i]
				buf := in[:p.n]
				if _, err := f.ReadAt(buf, p.off); err != nil {
					j.err = fmt.Errorf("reading %s: %w", path, err)
				} else {
					src := buf
					if p.filter != filterNone {
						split(tmp[:p.n], buf, int(p.filter))
						src = tmp[:p.n]
					}
					j.out = enc.EncodeAll(src, make([]byte, 0, p.n/2+1024))
				}
				close(j.done)
			}
		})
	}
	go func() {
		defer close(next)
		for _, j := range jobs {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case next <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	ix := &FrameIndex{Algorithm: "zstd", Frames: make([][3]int64, len(pieces))}
	st := CompressStats{Plain: b.Size(), Frames: len(pieces)}
	var werr error
	var done int64
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			werr = ctx.Err()
		}
		if werr != nil {
			break
		}
		<-slots
		if j.err != nil {
			werr = j.err
			break
		}
		if _, err := w.Write(j.out); err != nil {
			werr = err
			break
		}
		p := pieces[j.i]
		ix.Frames[j.i] = [3]int64{p.n, int64(len(j.out)), int64(p.filter)}
		st.Compressed += int64(len(j.out))
		done += p.n
		j.out = nil
		if progress != nil {
			progress(done, st.Plain)
		}
	}
	cancel() // stops the feeder; the workers finish their frame and see next closed
	wg.Wait()
	if werr != nil {
		return nil, CompressStats{}, werr
	}
	st.Elapsed = time.Since(start)
	return ix, st, nil
}

// frameDecoder decodes frames for a pull. Its buffers are kept on a free list (not a
// sync.Pool, which the collector empties) so a pull allocates a few frames' worth, once.
type frameDecoder struct {
	dec  *zstd.Decoder
	free chan []byte
}

func newFrameDecoder(jobs int) (*frameDecoder, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(jobs), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(maxFrame))
	if err != nil {
		return nil, err
	}
	return &frameDecoder{dec: d, free: make(chan []byte, 2*max(jobs, runtime.GOMAXPROCS(0))+2)}, nil
}

func (d *frameDecoder) buf(n int64) []byte {
	select {
	case b := <-d.free:
		if int64(cap(b)) >= n {
			return b[:n]
		}
	default:
	}
	return make([]byte, n, max(n, DefaultFrameSize))
}

// Release returns a buffer Decode gave out to the free list.
func (d *frameDecoder) Release(b []byte) {
	select {
	case d.free <- b:
	default:
	}
}

// Decode returns the n plain bytes of one frame (Release them after use); it implements
// transfer.Decoder.
func (d *frameDecoder) Decode(comp []byte, n int64, filter byte) ([]byte, error) {
	raw := d.buf(n)
	out, err := d.dec.DecodeAll(comp, raw[:0])
	if err != nil {
		d.Release(raw)
		return nil, err
	}
	if int64(len(out)) != n {
		d.Release(raw)
		return nil, fmt.Errorf("decoded %d bytes, the index says %d", len(out), n)
	}
	if filter == filterNone {
		return out, nil
	}
	plain := d.buf(n)
	unsplit(plain, out, int(filter))
	d.Release(out)
	return plain, nil
}

func (d *frameDecoder) close() { d.dec.Close() }
