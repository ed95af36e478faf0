// Command anepack turns a Hugging Face language model into one self-contained, memory-mappable
// .aneb bundle: `anepack ./checkpoint-dir -o model.aneb`. `anepack Org/Name` packs a model
// of the Hugging Face Hub, fetched into the Hugging Face cache. The subcommands fetch without
// packing (download) or list a repo's files (ls), publish a bundle to an OCI registry or a Hub
// repo (push), show a bundle (inspect) and check it (verify), write synthetic checkpoints for
// tests and benchmarks (synth), and print the version (version).
package main
