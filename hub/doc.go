// Package hub speaks the Hugging Face Hub's protocol: it downloads model
// repositories into the standard Hugging Face cache, so that files fetched by
// anepack are reused by Python tools (transformers, huggingface-cli, mlx-lm,
// llama.cpp) and the reverse, and it uploads files to Hub repositories
// (Client.Upload). docs/hub.md records the Hub behaviour all of this relies on.
//
// # Protocol
//
// A Snapshot resolves a revision (branch, tag or commit) to a commit with one
// API call (GET /api/models/{repo}/revision/{rev}?blobs=true, falling back to
// the paginated tree listing when a mirror does not return blob metadata),
// filters the listing with a caller-supplied predicate (PackFilter keeps only
// what packing needs), and downloads the missing files:
//
//   - HEAD {endpoint}/{repo}/resolve/{commit}/{file} without automatic
//     redirects. Relative redirects (renamed repos, the small-file
//     resolve-cache hop, mirrors) are followed by hand; an absolute redirect
//     is the CDN and its headers (X-Repo-Commit, X-Linked-Etag,
//     X-Linked-Size) describe the file. A redirect's Content-Length is never
//     taken as the file size.
//   - GET the CDN Location without the Authorization header (the URL is
//     signed; the token must not leave the Hub).
//   - The bytes go to blobs/<etag>.part, through the download engine shared
//     with package remote (internal/transfer). Interrupted downloads resume from the
//     .part file, also in a later process, with Range requests. Large files are
//     fetched as parallel ranged chunks when the server honours Range; the
//     chunk progress is kept in blobs/<etag>.part.json. A server that answers
//     200 to a Range request is handled by starting that file over from the
//     200 body.
//   - Every file is verified before it enters the cache: LFS files by sha256
//     (the etag), git-stored files by their git blob SHA-1, all by size. On a
//     mismatch the download is removed and retried; if it still fails the error
//     says so and nothing corrupt is left behind.
//   - Transient failures (408, 429, 5xx, connection errors, stalls) are retried
//     with exponential backoff; 429 honours the RateLimit ("api";r=0;t=55)
//     and Retry-After headers. Stalled connections time out (StallTimeout) and
//     resume where they stopped.
//
// # Cache layout
//
// The cache is the one huggingface_hub uses ($HF_HUB_CACHE, default
// $HF_HOME/hub):
//
//	models--Org--Name/blobs/<etag>                       verified file contents
//	models--Org--Name/snapshots/<commit>/<file>          relative symlink to ../../blobs/<etag>
//	models--Org--Name/refs/<branch>                      the commit, no trailing newline
//	models--Org--Name/trees/<commit>.json                the full file listing (format_version 1)
//	.locks/models--Org--Name/<etag>.lock                 flock'd while a blob is written
//
// Files are written to a temporary name, fsynced and renamed into place. A
// snapshot whose files are all present is used without downloading anything;
// with Offline set (HF_HUB_OFFLINE=1) no request is made at all and a missing
// file is named in the error.
//
// # Secrets
//
// The token is sent only to the Hub endpoint (SameOrigin), never to the CDN or
// to storage servers, and never written to the cache, to logs or to error
// messages (errors are redacted before they are returned).
//
// # Uploads
//
// Client.Upload creates the repo if needed, asks the Hub where the file goes
// (preupload), sends it to LFS storage through the batch API (one PUT, or parts
// in parallel to presigned URLs) unless the Hub has the object already, and
// commits it (NDJSON). The caller gives the retry policy and the displays.
package hub
