// Package transfer is the one download engine of anepack: it fetches a remote file into a
// local part file in ranged, parallel, resumable, retrying requests and hashes it as it lands.
// Package hub (the Hugging Face cache) and package remote (OCI registries and plain HTTPS) each
// describe where the bytes come from (a Source) and what to do with the finished file; the
// engine does everything in between.
//
// # Units
//
// The output is cut into Units: byte ranges of a plain file (Chunks), or zstd frames of a
// compressed layer whose source range differs from its output range (a Decoder turns them
// back). The first unit is fetched alone until the server has answered a Range request with
// 206; then up to Jobs units go at once. A server that ignores Range (200 to a ranged
// request) is read in one stream from byte 0 instead, every unit from that stream; a 200
// after a 206 means the file changed under its validator (ErrChanged: the caller starts over).
//
// # Retries
//
// A failed attempt is retried with the caller's backoff, resuming where it stopped, when it is
// transient: a Transient error from the Source (408, 429, 5xx, connection errors; its Wait is
// what the server asked for), a body that was cut, stalled (stall.ErrStalled) or a frame that
// did not decode. The count restarts whenever an attempt writes bytes, except after a stall: a
// server that trickles cannot keep a download alive. Write errors (a full disk) are never
// retried.
//
// # Resuming
//
// The progress of each unit is recorded every second in a state file beside the part file,
// written in place at a size reserved at the start, so that recording progress never needs
// disk space the download has just used up. A later run (in this process or another) takes the
// state if it names the same ID and size. A file of several units is preallocated; one without
// usable state is started over, since its length says nothing. A file of one unit grows as a
// contiguous prefix, so without state its length is its progress (a part file left by another
// tool, or by a run that could not write its state, resumes too).
//
// # Hashing
//
// A hasher follows the contiguous completed prefix, reading it back from the part file (the
// page cache), so that the digests are ready when the last byte lands, whatever order the
// units finish in.
package transfer
