// Package blobfile reads and writes the weight blob files that MIL programs reference with
// BLOBFILE(path, offset): Core ML's MIL blob-storage format, the layout the Apple Neural Engine
// compiler accepts through the in-memory model API (docs/ane.md, "Weight blobs").
//
// Byte layout (all integers little-endian):
//
//	file header, 64 bytes at offset 0
//	  +0   u32  count    number of records in the file
//	  +4   u32  version  always 2
//	  +8   56 zero bytes
//	record k, 64 bytes, at a 64-byte aligned offset (the first at 64)
//	  +0   u32  sentinel 0xDEADBEEF (bytes EF BE AD DE)
//	  +4   u32  dtype    MIL blob dtype code (1 fp16, 2 fp32, 3 uint8, 4 int8, 5 bf16, ...)
//	  +8   u64  size     payload size in bytes
//	  +16  u64  offset   ABSOLUTE file offset of the payload (= record offset + 64)
//	  +24  u64  padding  unused bits of sub-byte types, else 0
//	  +32  32 zero bytes
//	payload k, size bytes at record offset + 64, row-major in the tensor's declared shape,
//	  followed by zero padding up to the next 64-byte boundary where record k+1 starts.
//
// A MIL program names a tensor by its RECORD offset (64 for the first), not its payload offset.
// The payload is 64-byte aligned, so a CPU kernel can read the same bytes in place.
package blobfile
