// Command anepack turns a Hugging Face language model into one self-contained, memory-mappable
// .aneb bundle: `anepack ./checkpoint-dir -o model.aneb`. Subcommands create synthetic
// checkpoints (synth), show a bundle (inspect) and check it (verify).
package main

import "github.com/anepack/anepack/internal/cli"

func main() { cli.Main("anepack", newRootCmd()) }
