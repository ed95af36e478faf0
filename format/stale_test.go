//go:build linux || darwin

package format

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRemoveStaleTemps: Create removes the temporary files of our own naming that predate the
// process and that no live Writer holds, and nothing else.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := processStart.Add(-time.Hour)
	files := map[string]bool{ // name -> must survive
		".m.aneb.tmp-1234":     false, // stale, same bundle
		".other.aneb.tmp-5678": false, // stale, another bundle of the same kind
		".m.aneb.tmp-99":       true,  // held by a live Writer (locked below)
		".new.aneb.tmp-42":     true,  // written since this process started
		"m.aneb.tmp-1":         true,  // not our naming: no leading dot
		".m.aneb.tmp-1x":       true,  // not our naming: suffix not digits
		".m.aneb.tmp-":         true,
		".model.gguf.tmp-7":    true, // another extension
		".aneb.tmp-3":          true, // nothing before the extension
		"notes.txt":            true,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if name != ".new.aneb.tmp-42" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	live, err := os.Open(filepath.Join(dir, ".m.aneb.tmp-99"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := lockTemp(live); err != nil {
		t.Fatal(err)
	}
	w, err := Create(filepath.Join(dir, "m.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	got := dirNames(t, dir)
	for name, keep := range files {
		if slices.Contains(got, name) != keep {
			t.Errorf("%s: present %v, want %v (directory: %q)", name, !keep, keep, got)
		}
	}
	// The new Writer's own file holds its lock: a later sweep (as another process would run
	// it) leaves it alone, even once it is old.
	os.Chtimes(w.tmp, old, old)
	removed, err := RemoveStaleTemps(filepath.Join(dir, "m.aneb"))
	if err != nil || len(removed) != 0 {
		t.Errorf("second sweep removed %q (%v); the files are live", removed, err)
	}
}
