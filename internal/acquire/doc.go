// Package acquire brings models into the local store under their names, and finds them there:
// `anerun Qwen/Qwen2.5-0.5B-Instruct` downloads the checkpoint from the Hugging Face Hub,
// packs it and keeps the bundle as "Qwen/Qwen2.5-0.5B-Instruct:f16" (FetchAndPack); `anerun
// import` and `anepack --store` add bundle files under the same kind of name (Import,
// AddPacked); Find hands out a stored bundle, verified. A GGUF file is refused with what to do
// instead (CheckNotGGUF), as is a Hub repo that is not a transformers checkpoint.
//
// It is application logic and sits above what it combines: hub (downloads), pack (packing),
// store (the bundles on disk), format (their manifests) and internal/modelname (the names).
// Only the commands import it.
package acquire
