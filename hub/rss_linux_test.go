//go:build !race

// The race detector's shadow memory multiplies a process's resident set, so
// the memory ceiling is only meaningful in a normal build.

package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
)

// TestPeakRSS: the memory a download needs does not grow with the file.
// Each size is downloaded by a separate process (the test binary in child
// mode) and its peak resident set (getrusage ru_maxrss of the child, as the
// kernel counts it, code pages of the binary included) is checked against a
// constant ceiling. Bytes go through fixed 256 KiB buffers straight to the
// file, one per connection, so the peak follows the number of connections
// (Jobs = 8 here), not the size. HUB_RSS_CHUNK sets the chunk size (default
// 1 MiB, so every size keeps all 8 connections busy and only the size
// differs); HUB_RSS_SIZES sets the sizes in MiB (default 16,128).
func TestPeakRSS(t *testing.T) {
	const ceiling = 40 << 10 // KiB; measured peaks are 13-23 MiB
	srv := hubtest.New(t, hubtest.Options{})
	sizes := benchSizes(t)
	for i, size := range sizes {
		src := filepath.Join(t.TempDir(), "model.safetensors")
		writeBigFile(t, src, size)
		repo := fmt.Sprintf("Org/Size%d", i)
		srv.MustAddRepo(t, hubtest.Repo{ID: repo, Files: []hubtest.File{{Path: "model.safetensors", Disk: src}}})
		chunk := os.Getenv("HUB_RSS_CHUNK")
		if chunk == "" {
			chunk = "1048576"
		}
		child := childCmd(t, srv.URL, t.TempDir(), repo, "HUB_TEST_CHUNK="+chunk, "HUB_TEST_JOBS=8", "HUB_TEST_MEMSTATS=1")
		if out, err := child.Output(); err != nil {
			t.Fatalf("child download of %d MiB: %v %s", size>>20, err, out)
		}
		maxKB := child.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
		t.Logf("file %5d MiB: peak RSS %5.1f MiB", size>>20, float64(maxKB)/1024)
		if maxKB > ceiling {
			t.Errorf("downloading %d MiB peaked at %d KiB resident, above the %d KiB ceiling", size>>20, maxKB, ceiling)
		}
	}
}
