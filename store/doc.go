// Package store is the local content-addressed store of bundles that anerun runs: pulled
// bundles are kept by digest, named by the references they were pulled as, and verified
// before they are handed out for mapping.
//
// # Layout
//
// The store lives in $ANEPACK_HOME (default ~/.cache/anepack, or $XDG_CACHE_HOME/anepack):
//
//	blobs/sha256/<hex>     a verified bundle, named by the sha256 of the whole file; mode 0444
//	refs/<escaped ref>     JSON Entry: reference, digest, size, model summary, added-at time
//	                       and, for a bundle that was not pulled, its source; a reference is
//	                       what it was pulled as (oci://…) or the name anerun gave it
//	                       (Org/Name:f16, see internal/modelname)
//	verified/<hex>         the identity of a blob hashed before (verified.go)
//	tmp/                   work area: downloads in progress (<key>.part and its state) and
//	                       files being installed; nothing here is ever handed out
//	lock                   flock'd while refs or blobs are added or removed
//
// Pointing a reference at another bundle (a tag that moved) deletes the bundle it named
// before unless another reference still names it.
//
// A reference is stored under a file name made of its characters with everything but
// [A-Za-z0-9._-] percent-encoded ("oci://r/ns/m:v1" becomes "oci%3A%2F%2Fr%2Fns%2Fm%3Av1");
// the JSON holds the reference itself, so the name only has to be unique.
//
// # Atomicity and verification
//
// A bundle enters blobs/ only by a rename from tmp/ (the same file system) after its digest
// has been checked and the file fsynced, so a blob path never names a partial file. A
// reference is written after its blob, by the same write-fsync-rename. [Store.Verify]
// hashes the whole file before handing out its path; a mismatch removes the blob and
// returns a [*CorruptError] that says so.
//
// # Several processes
//
// Two processes may use one store at once. Blob installs are renames of identical content,
// so a race between two installs of one digest is harmless. Adding a reference, removing
// references and deleting blobs that no reference uses all take the store-wide lock (an
// flock on the lock file, held for milliseconds), so a removal never deletes a blob that a
// concurrent pull has just named. A download holds a lock on its own part file
// (tmp/<key>.lock) for as long as it writes it, so a second pull of the same bundle waits
// and then finds it installed. On systems without flock (outside Unix) the locks are no-ops
// and only the rename guarantees hold. The locks, atomic writes and copies are
// internal/fileutil's; the download itself is internal/transfer's (see package remote).
package store
