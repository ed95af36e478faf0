// Package modelname is how people name the models of the local store: a model and a tag,
// "Qwen/Qwen2.5-0.5B-Instruct:f16".
//
// The model is a Hugging Face repo id (Org/Name) or, for a bundle packed from a local
// checkpoint, the bundle's model name; the tag says which stored variant, by the storage type
// of its weights: f16 (the default), f32, int8 or int4. The store keeps the name as the
// bundle's reference, so `anerun list` shows it and `anerun rm` takes it. Parse reads a name
// as the user types it; ForBundle names a bundle by its manifest.
//
// The package sits just above hub (which says what a repo id is) and format (the manifest a
// bundle is named from); package internal/acquire fills the store under these names.
package modelname
