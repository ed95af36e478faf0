package format

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFailureMidSection makes the disk refuse a write in the middle of a section (a child
// process limited to 1 MiB files by RLIMIT_FSIZE gets EFBIG) and checks that the error is
// reported and Abort leaves nothing in the directory.
func TestWriteFailureMidSection(t *testing.T) {
	if os.Getenv(childEnv) == "fsize" {
		os.Exit(fsizeChild(os.Getenv("ANEPACK_FORMAT_TEST_DIR")))
	}
	dir := t.TempDir()
	cmd, out := startChild(t, "TestWriteFailureMidSection", "fsize", dir)
	text, _ := out.ReadString(0)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; output:\n%s", err, text)
	}
	if !strings.Contains(text, "file too large") {
		t.Errorf("child output %q does not report EFBIG", text)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after the failed write and Abort, directory holds %q", names)
	}
}

func fsizeChild(dir string) int {
	signal.Ignore(syscall.SIGXFSZ) // get EFBIG instead of being killed
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println(err)
		return 1
	}
	lim.Cur = 1 << 20
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println(err)
		return 1
	}
	w, err := Create(filepath.Join(dir, "m.aneb"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer w.Abort()
	_, err = w.Add(KindBlob, "blob/a", make([]byte, 4<<20))
	if err == nil {
		_, err = w.Commit(testManifest())
	}
	if err == nil {
		fmt.Println("a 4 MiB bundle was written under a 1 MiB file size limit")
		return 1
	}
	fmt.Println(err)
	if !errors.Is(err, syscall.EFBIG) {
		return 1
	}
	if err := w.Abort(); err != nil {
		fmt.Println(err)
		return 1
	}
	return 0
}
