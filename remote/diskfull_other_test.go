//go:build !linux

package remote

import "testing"

// helperDiskFull is only started by TestPullDiskFull, which needs Linux mount namespaces.
func helperDiskFull(t *testing.T, args []string) {
	t.Fatal("the disk-full helper needs Linux (mount namespaces and tmpfs)")
}
