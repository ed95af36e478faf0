// Package fileutil is the file toolbox the packages share: writing a file so that readers see
// either the old content or the new, never a part (WriteAtomic); copying one (CopyFile);
// cross-process locks (Lock, TryLock); free space and a full disk (FreeSpace, IsDiskFull);
// durable renames (SyncDir); and read-only memory maps (Map).
//
// Opening files that must be regular (bundles, checkpoints) without blocking on a named pipe
// is the job of package regfile, which this package uses: it is kept apart because its one
// rule is a security property (docs/security.md, "Local files") that every reader of untrusted
// paths must go through, and a package of that one purpose is easy to audit.
package fileutil
