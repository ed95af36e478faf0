package remote

import (
	"fmt"
	"os"

	"github.com/anepack/anepack/internal/transfer"
)

// A server says how large a bundle is (Content-Length, Content-Range, an OCI config's size) and
// a pull plans its download from that: chunk records, the progress bar, the free-space check.
// A server that claims 10^15 bytes made a pull build 15 million chunk records (2.2 GB) before
// the free-space check refused it; so the claim is checked first, against a bound and the free
// space, and the chunks are sized so that there are never more than maxChunks of them.

// maxBundleSize is the largest bundle a pull accepts: 4 TiB, twice the fp16 weights of a model of
// a trillion parameters.
const maxBundleSize = 1 << 42

// maxChunks bounds the chunk records of one download: a bundle larger than maxChunks default
// chunks is fetched in larger ones.
const maxChunks = 1 << 16

// checkClaim refuses a claimed bundle size outside [1, maxBundleSize], or larger than the
// store's free space and what an earlier attempt left in partPath (a resumed download needs
// only the rest). what names where the claim came from, for the message.
func (o *Options) checkClaim(label, what string, size int64, partPath string) error {
	if size <= 0 || size > maxBundleSize {
		return fmt.Errorf("%s: %s claims a bundle of %d bytes; expected 1 to %d (4 TiB)", label, what, size, int64(maxBundleSize))
	}
	need := size
	if fi, err := os.Stat(partPath); err == nil {
		need -= min(fi.Size(), size)
	}
	if err := o.Store.CheckSpace(need); err != nil {
		return fmt.Errorf("%s: %s claims a bundle of %d bytes: %w", label, what, size, err)
	}
	return nil
}

// chunks cuts a plain blob of size bytes into ranged units of the configured chunk size, or
// larger ones where that would make more than maxChunks.
func (o *Options) chunks(size int64) []*transfer.Unit {
	chunk := o.chunkSize()
	if chunk > 0 {
		chunk = max(chunk, (size+maxChunks-1)/maxChunks)
	}
	return transfer.Chunks(size, chunk)
}
