// Package sysmem tells how much memory the process can still take: what the operating system
// has available and what the process's limits (a cgroup, RLIMIT_AS, RLIMIT_DATA) leave, the
// least of them. The runtime sizes a KV cache against it before allocating: an allocation the
// system refuses is not an error in Go but a fatal "runtime: out of memory".
package sysmem

import (
	"fmt"

	"github.com/anepack/anepack/internal/bytesize"
)

// Limit is the memory the process can still take and what bounds it.
type Limit struct {
	Bytes  int64
	Source string // what sets the bound, for messages: "MemAvailable in /proc/meminfo", ...
}

// String says how much and what bounds it: "3.2 GiB (MemAvailable in /proc/meminfo)".
func (l Limit) String() string { return fmt.Sprintf("%s (%s)", bytesize.Format(l.Bytes), l.Source) }

// Available returns the memory the process can still take, or false where that is unknown.
func Available() (Limit, bool) { return available() }
