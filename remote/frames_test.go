package remote

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/anepack/anepack/format"
)

func TestSplitRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, w := range []int{1, 2, 4} {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 1001, 4096} {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			mid, back := make([]byte, n), make([]byte, n)
			split(mid, src, w)
			unsplit(back, mid, w)
			if !bytes.Equal(back, src) {
				t.Fatalf("w=%d n=%d: split/unsplit changed the bytes", w, n)
			}
			if w == 2 && n >= 4 && (mid[0] != src[0] || mid[1] != src[2] || mid[n/2] != src[1]) {
				t.Fatalf("w=2 n=%d: not low bytes then high bytes: % x -> % x", n, src[:4], mid[:4])
			}
		}
	}
}

// TestCompressBundle compresses a real bundle into frames and decodes every frame back.
func TestCompressBundle(t *testing.T) {
	path := tinyBundle(t)
	plain, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var comp bytes.Buffer
	const frame = 1 << 20
	ix, st, err := CompressBundle(context.Background(), path, &comp, frame, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.check(int64(len(plain)), int64(comp.Len())); err != nil {
		t.Fatal(err)
	}
	if st.Plain != int64(len(plain)) || st.Compressed != int64(comp.Len()) || st.Frames != len(ix.Frames) {
		t.Errorf("stats %+v disagree with the output (%d plain, %d compressed, %d frames)", st, len(plain), comp.Len(), len(ix.Frames))
	}
	t.Logf("tiny bundle: %d frames, ratio %.3f, %.0f MB/s", st.Frames, st.Ratio(), st.MBps())
	if st.Ratio() > 0.9 {
		t.Errorf("ratio %.3f: fp16 weights and a JSON tokenizer should compress better than 0.9", st.Ratio())
	}
	dec, err := newFrameDecoder(2)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.close()
	var split2 int
	out := make([]byte, 0, len(plain))
	for _, u := range ix.units() {
		if u.N > frame {
			t.Fatalf("frame of %d bytes, more than %d", u.N, frame)
		}
		if u.Filter == filterSplit2 {
			split2++
		}
		b, err := dec.Decode(comp.Bytes()[u.SOff:u.SOff+u.SN], u.N, u.Filter)
		if err != nil {
			t.Fatalf("frame at %d: %v", u.SOff, err)
		}
		out = append(out, b...)
		dec.Release(b)
	}
	if !bytes.Equal(out, plain) {
		t.Fatal("decoded frames differ from the bundle")
	}
	if split2 == 0 {
		t.Error("no frame was byte-split, though the bundle's weights are f16")
	}
	// A flipped byte in a frame fails that frame's checksum.
	bad := bytes.Clone(comp.Bytes())
	u := ix.units()[len(ix.units())/2]
	bad[u.SOff+u.SN/2] ^= 1
	if _, err := dec.Decode(bad[u.SOff:u.SOff+u.SN], u.N, u.Filter); err == nil {
		t.Error("a corrupted frame decoded without error")
	}
}

// TestPlanFrames checks that frames cover the file in order and never mix a weight section
// with text.
func TestPlanFrames(t *testing.T) {
	b, err := format.Open(tinyBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const frame = 1 << 20
	ps := planFrames(b, frame)
	var pos int64
	for _, p := range ps {
		if p.off != pos || p.n <= 0 || p.n > frame {
			t.Fatalf("piece %+v at position %d", p, pos)
		}
		pos += p.n
		for _, s := range b.Sections() {
			if s.Length == 0 || s.End() <= p.off || s.Offset >= p.off+p.n {
				continue
			}
			weights := s.Kind == format.KindTensors || s.Kind == format.KindBlob
			if weights != (p.filter == filterSplit2) {
				t.Errorf("piece %+v overlaps section %s (%v) with filter %d", p, s.Name, s.Kind, p.filter)
			}
		}
	}
	if pos != b.Size() {
		t.Errorf("pieces cover %d bytes of %d", pos, b.Size())
	}
}

func TestFrameIndexCheck(t *testing.T) {
	good := FrameIndex{Algorithm: "zstd", Frames: [][3]int64{{10, 5, 2}, {3, 4, 0}}}
	if err := good.check(13, 9); err != nil {
		t.Fatal(err)
	}
	for name, ix := range map[string]FrameIndex{
		"algorithm": {Algorithm: "gzip", Frames: good.Frames},
		"filter":    {Algorithm: "zstd", Frames: [][3]int64{{10, 5, 3}, {3, 4, 0}}},
		"huge":      {Algorithm: "zstd", Frames: [][3]int64{{maxFrame + 1, 5, 0}}},
		"sum":       {Algorithm: "zstd", Frames: [][3]int64{{10, 5, 2}}},
	} {
		if err := ix.check(13, 9); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
