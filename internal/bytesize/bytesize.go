// Package bytesize writes a number of bytes the way anepack's messages show sizes: in binary
// units with one decimal, "942.3 MiB".
package bytesize

import "fmt"

// Format renders n bytes with a binary unit, e.g. "512 B", "1.5 KiB", "942.3 MiB". Every size
// and rate the commands print uses it, so a run shows one unit system.
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
