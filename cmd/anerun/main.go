// Command anerun runs a packed model: `anerun model.aneb "prompt"` memory-maps the bundle,
// applies its chat template and streams the generated text to stdout; `anerun Org/Name
// "prompt"` does the same with a Hugging Face model, fetched and packed into the local store
// the first time. `anerun -i MODEL` is an interactive chat; the subcommands serve the OpenAI
// API (serve), manage the store (pull, import, list, rm), benchmark (bench), print logits for
// comparison with transformers (logits), and show what the tokenizer and the chat template do
// (tokenize, template).
//
// The commands are registered in one place, newRootCmd in root.go; each lives in its own file.
// What MODEL names is decided in resolve.go, the backend in backend.go.
package main

import (
	"time"

	"github.com/anepack/anepack/internal/cli"
)

// processStart is as close to the start of the process as Go code can observe, for the time to
// first token that --verbose reports.
var processStart = time.Now()

// exitInterrupted is the status after Ctrl-C, as shells report a process killed by SIGINT.
const exitInterrupted = cli.ExitInterrupted

func main() { cli.Main("anerun", newRootCmd()) }
