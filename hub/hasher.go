package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"strconv"
)

// hasher digests a file while it is being downloaded: it reads back the
// contiguous prefix that is already on disk (from the page cache) and
// follows it as it grows. Reading back, instead of hashing the stream,
// works the same for one stream, parallel chunks arriving out of order and
// a .part resumed from an earlier process, and it runs on its own core
// while the network goroutines write.
type hasher struct {
	f        *os.File
	size     int64
	pos      int64
	sha256   hash.Hash
	gitSHA1  hash.Hash // nil unless the file is git-stored
	frontier func() int64
	wake     <-chan struct{}
}

func newHasher(f *os.File, size int64, gitBlob bool, frontier func() int64, wake <-chan struct{}) *hasher {
	h := &hasher{f: f, size: size, sha256: sha256.New(), frontier: frontier, wake: wake}
	if gitBlob {
		h.gitSHA1 = sha1.New()
		io.WriteString(h.gitSHA1, "blob "+strconv.FormatInt(size, 10)+"\x00")
	}
	return h
}

// run hashes until the whole file is digested or ctx ends.
func (h *hasher) run(ctx context.Context) error {
	buf := getBuf()
	defer putBuf(buf)
	for {
		for fr := h.frontier(); h.pos < fr; {
			n := min(int64(len(buf)), fr-h.pos)
			if _, err := h.f.ReadAt(buf[:n], h.pos); err != nil {
				return err
			}
			h.sha256.Write(buf[:n])
			if h.gitSHA1 != nil {
				h.gitSHA1.Write(buf[:n])
			}
			h.pos += n
		}
		if h.pos >= h.size {
			return nil
		}
		select {
		case <-h.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *hasher) sums() hashes {
	s := hashes{sha256: hex.EncodeToString(h.sha256.Sum(nil))}
	if h.gitSHA1 != nil {
		s.gitSHA1 = hex.EncodeToString(h.gitSHA1.Sum(nil))
	}
	return s
}

// hashFile digests a whole file (for cached git-stored files, whose sha256
// the listing does not give).
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
