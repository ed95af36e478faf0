// Package format reads and writes the .aneb container: one file holding a whole model (weights,
// ANE weight blobs, MIL programs, tokenizer tables, verbatim source files) plus a JSON manifest,
// laid out so that every section can be memory-mapped and used in place.
//
// # Byte layout
//
// This package writes format version 1.3 ([MajorVersion].[MinorVersion]). The layout below is
// that of every 1.x file; minor versions add manifest fields and tensor types only.
//
// All integers are little-endian. A "page" is 16 KiB (16384 bytes, the Apple Silicon page
// size): every section starts on a page boundary, so a section can be handed to the ANE
// compiler or to a CPU kernel straight from the mapping, without a copy.
//
//	offset  size  contents
//	0       128   header (below)
//	128     16256 zero
//	16384   ...   sections, each at a 16 KiB boundary, zero padding between them
//	T       128*N section table, N entries; T is a 16 KiB boundary after the last section
//	T+128*N M     manifest: JSON (UTF-8, indented), ending at the end of the file
//
// Header, 128 bytes at offset 0:
//
//	offset size field            meaning
//	0      4    magic            "ANEB" (41 4E 45 42)
//	4      2    major            MajorVersion; a reader refuses a newer major version
//	6      2    minor            MinorVersion; a newer minor only adds things an older reader may ignore
//	8      4    flags            0 (reserved)
//	12     4    header size      128
//	16     8    table offset     T: file offset of the section table, a multiple of 16384
//	24     8    table length     128 * section count
//	32     4    section count    N
//	36     4    reserved         0
//	40     8    manifest offset  T + 128*N
//	48     8    manifest length  M, in bytes
//	56     8    file size        T + 128*N + M: the whole file
//	64     32   root digest      sha256 of header (digest field zeroed) || table || manifest
//	96     32   reserved         0
//
// Section table entry, 128 bytes each, in file order:
//
//	offset size field      meaning
//	0      4    kind       SectionKind: 1 tensors, 2 blob, 3 mil, 4 tokenizer, 5 file
//	4      4    flags      0 (reserved)
//	8      8    offset     file offset of the section's first byte, a multiple of 16384
//	16     8    length     bytes in the section (may be 0)
//	24     32   sha256     sha256 of the section's bytes
//	56     2    name len   L, 1..70
//	58     70   name       L bytes of UTF-8 (no NUL), then zero bytes; unique in the file
//
// # Digests
//
// The root digest in the header covers the header, the section table and the manifest. The
// table holds the sha256 of every section, and every byte outside the header, the sections,
// the table and the manifest must be zero, so the root digest identifies the contents of the
// whole file: it is a two-level hash tree that costs nothing extra to compute while packing.
// [Open] checks the header, the table, the manifest and the root digest, at a cost independent
// of the size of the weights (tens of microseconds, plus about 16 ms per MB of manifest JSON
// for encoding/json: about 4 ms for the ~235 KB manifest of a Qwen2.5-0.5B-shaped bundle);
// section digests are checked lazily by
// [Bundle.VerifySection] or all at once, with the padding, by [Bundle.Verify].
// [Bundle.FileDigest] is the plain sha256 of the file's bytes, which registries and the
// local store use to name a bundle.
//
// # Compatibility
//
// A reader accepts every 1.x file. In a file whose minor version is newer than
// [MinorVersion] it ignores the header flags and reserved fields, entry flags, and sections of
// kinds it does not know (they stay in [Bundle.Sections] with their numeric kind); in a file
// of minor version up to [MinorVersion] these must be zero or known. A newer major version is
// refused with [ErrVersion] and a message naming both versions. The layout rules (alignment,
// bounds, zero padding, the digests) hold for every 1.x file.
//
// The manifest of any minor version may hold fields a reader does not know; it ignores them.
// Minor versions 0 to 2 list the ANE programs under the key "kernels" rather than "programs":
// the reader reads that key into [Manifest.Programs] for those versions only.
//
// # Writing
//
// [Writer] streams: sections are written and hashed as they are produced, through a 1 MiB
// buffer, into a temporary file next to the target; [Writer.Commit] appends the table and the
// manifest, writes the header, fsyncs and renames the file onto the target path. Until then no
// file exists at the target path, so a failure or a Ctrl-C (see [AbortOnSignal]) leaves
// nothing behind once [Writer.Abort] has run. A process killed outright (SIGKILL, power loss)
// leaves its ".<name>.tmp-*" file, never a partial bundle at the target path; the next
// [Create] in that directory removes such files when no live writer holds them
// ([RemoveStaleTemps]).
package format
