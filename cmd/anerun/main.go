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
