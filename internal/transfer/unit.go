package transfer

import "sync/atomic"

// Unit is one piece of the output file, fetched by one request.
type Unit struct {
	// Off and N are where the unit goes in the output file.
	Off, N int64
	// SOff and SN are where it comes from in the remote file (the same as Off and N for a
	// plain file).
	SOff, SN int64
	// Frame marks a compressed frame to decode (else raw bytes); Filter is its filter byte.
	Frame  bool
	Filter byte
	// done counts output bytes on disk: a contiguous prefix for raw units, 0 or N for frames.
	done atomic.Int64
}

func (u *Unit) complete() bool { return u.done.Load() >= u.N }

// pos is the output offset of the unit's first missing byte.
func (u *Unit) pos() int64 { return u.Off + u.done.Load() }

// Chunks cuts a plain file of size bytes into units of chunk bytes (one unit when chunk <= 0
// or the file is no larger than one chunk).
func Chunks(size, chunk int64) []*Unit {
	if chunk <= 0 || size <= chunk {
		return []*Unit{{Off: 0, N: size, SOff: 0, SN: size}}
	}
	var us []*Unit
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		us = append(us, &Unit{Off: off, N: n, SOff: off, SN: n})
	}
	return us
}
