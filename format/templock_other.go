//go:build !(linux || darwin)

package format

import "os"

// lockTemp does nothing where there is no advisory lock to take (see the Unix version).
func lockTemp(*os.File) error { return nil }

// removeIfUnlocked never removes: without locks a live Writer's file cannot be told from a
// stale one.
func removeIfUnlocked(string) bool { return false }
