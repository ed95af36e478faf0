package transfer

import (
	"context"
	"crypto/sha256"
	"hash"
)

type hashResult struct {
	sums [][]byte
	err  error
}

// hash follows the frontier, digesting the output as it is completed, so that the digests are
// ready when the last byte lands. Reading back, instead of hashing the streams, works the same
// for one stream, units arriving out of order and a part resumed from an earlier process, and
// it runs on its own core while the network goroutines write.
func (t *Transfer) hash(ctx context.Context) hashResult {
	newHashes := t.NewHashes
	if newHashes == nil {
		newHashes = func() []hash.Hash { return []hash.Hash{sha256.New()} }
	}
	buf := getBuf()
	defer putBuf(buf)
	hs := newHashes()
	var pos int64
	gen := t.gen.Load()
	for pos < t.Size {
		if g := t.gen.Load(); g != gen {
			hs, pos, gen = newHashes(), 0, g
		}
		if fr := t.frontier(); fr > pos {
			n := min(fr-pos, int64(len(buf)))
			if _, err := t.f.ReadAt(buf[:n], pos); err != nil {
				return hashResult{err: t.diskErr(err)}
			}
			if t.gen.Load() != gen {
				continue // rewritten meanwhile: start over
			}
			for _, h := range hs {
				h.Write(buf[:n])
			}
			pos += n
			continue
		}
		select {
		case <-t.wake:
		case <-ctx.Done():
			return hashResult{err: ctx.Err()}
		}
	}
	sums := make([][]byte, len(hs))
	for i, h := range hs {
		sums[i] = h.Sum(nil)
	}
	return hashResult{sums: sums}
}
