// Package remote moves bundles between machines: it pushes a .aneb to an OCI registry or a
// Hugging Face repo, pulls one from a registry, the Hub or a plain URL into the local store
// (package store), and resolves any bundle reference to a verified local path (Resolve, what
// `anerun REF "prompt"` calls).
//
// # References
//
// One syntax names a bundle everywhere (ParseRef):
//
//	oci://registry.example.com[:port]/ns/name[:tag][@sha256:<hex>]   tag defaults to latest
//	hf://org/repo[@revision][/path/file.aneb]                        revision defaults to main
//	https://host/path/model.aneb                                     (Options.Digest: --digest)
//	./model.aneb, /abs/model.aneb, file:///abs/model.aneb            local files
//
// # OCI
//
// A bundle is an OCI artifact (see ArtifactType): an image manifest whose config is a
// BundleConfig (digest, size, model summary, frame index) and whose one layer is either the
// bundle itself (LayerMediaType, layer digest = bundle digest) or its zstd frames
// (LayerMediaTypeZstdFrames). The model summary is also in the manifest's annotations.
// Registries are reached through oras-go v2 (oras.land/oras-go/v2): credentials come from
// Options.Username/Password or the Docker credential store (~/.docker/config.json and its
// helpers), PlainHTTP talks http://. Blob downloads go through the same authenticated client
// but with the ranged transfer engine (below), since oras fetches a blob as one stream.
//
// # Transfer
//
// A download goes to tmp/<digest hex>.part in the store, under a lock on that key (a second
// process pulling the same bundle waits, then finds it installed). The engine is
// internal/transfer, shared with package hub; this package gives it the source (the registry
// or the URL, with If-Range) and installs what it produced. The blob is cut into units
// — ranged chunks of ChunkSize for a plain layer, frames for a compressed one — fetched by
// Jobs parallel requests once the server has answered the first one with 206 (a server that
// ignores Range is read in one stream). Each unit retries transient failures (connection
// errors, cut bodies, stalls longer than StallTimeout, 408/429/5xx) with doubling backoff,
// resuming where it stopped; the retry budget restarts whenever bytes arrive. Progress is
// recorded every second in tmp/<key>.part.json, so a killed pull resumes in the next
// process; If-Range (https) or the blob digest (OCI) make sure the bytes belong together.
// The output is hashed while it is written (following the completed prefix), so the sha256
// is known when the last byte lands; a mismatch discards the download (it is tried once
// more) and nothing is installed. The file must also open as a bundle (header, table,
// manifest, root digest; all section digests when no digest was known beforehand). Then it
// is fsynced and renamed into blobs/sha256/ — nothing partial is ever visible.
//
// # Compression
//
// FP16 weights converted from BF16 compress well with zstd once their bytes are split into
// planes (docs/distribution.md, "Compression"). CompressBundle cuts the bundle into independent frames of
// FrameSize bytes (default 8 MiB) along section boundaries, byte-splits the weight sections,
// and compresses every frame with zstd (entropy-coded literals, frame checksums) on all
// CPUs. A push (CompressAuto) sends the frames when they save more than MinSaving (10%); a
// pull fetches and decodes frames in parallel, resumes per frame, and always installs the
// plain, mappable bundle after checking its digest. The full-size SYNTH-1 Qwen2.5-0.5B
// bundle compresses to 0.627.
//
// # Hugging Face
//
// Everything that speaks the Hub's protocol is in package hub. Pulls use its downloads
// (Hugging Face cache, resume, verification) and bring the file into the store as a hard
// link; pushes use hub.Client.Upload (create the repo, preupload, LFS batch, basic or
// multipart transfer, verify, commit; docs/hub.md) under this package's retry policy.
package remote
