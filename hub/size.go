package hub

import "fmt"

// formatSize renders n bytes with a decimal unit, e.g. "1.5 GB", "12.0 MB", "512 B", as the
// Hugging Face Hub shows sizes, so a message can be compared with the repo's page; negative
// sizes keep their sign.
func formatSize(n int64) string {
	const unit = 1000
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for ; (f >= unit || f <= -unit) && i < 5; i++ {
		f /= unit
	}
	return fmt.Sprintf("%.1f %cB", f, "kMGTPE"[i-1])
}
