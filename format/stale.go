package format

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// processStart is when this process began (as near as package initialisation gets): a
// temporary file older than that cannot be one this process is writing.
var processStart = time.Now()

// tempPattern is the name os.CreateTemp gives a Writer's temporary file for a bundle named base.
func tempPattern(base string) string { return "." + base + ".tmp-*" }

// isOurTemp reports whether name is a Writer's temporary file for a bundle with extension ext
// (for example ".aneb"), or for exactly base when ext is empty: "." + name + ".tmp-" + digits.
func isOurTemp(name, base, ext string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, ".tmp-")
	if i <= 0 {
		return false
	}
	bundle, digits := rest[:i], rest[i+len(".tmp-"):]
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	if ext == "" {
		return bundle == base
	}
	return strings.HasSuffix(bundle, ext) && len(bundle) > len(ext)
}

// RemoveStaleTemps removes, from path's directory, the temporary files that Writers for bundles
// like path (the same extension) left behind: a process killed by SIGKILL or a power cut
// cannot clean up after itself, and nothing else ever would. Only files of our own naming are
// considered, and only those last modified before this process started that no live Writer
// holds (a Writer keeps a lock on its file where the platform has one; elsewhere nothing is
// removed). It returns the files removed. Create calls it.
func RemoveStaleTemps(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	ext := filepath.Ext(base)
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isOurTemp(e.Name(), base, ext) {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(processStart) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if removeIfUnlocked(p) {
			removed = append(removed, p)
		}
	}
	return removed, nil
}
