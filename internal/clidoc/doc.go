// Package clidoc writes the command-line reference of a cobra command tree as Markdown (one
// page per command, as cobra's doc generator lays it out, and the tool's rows of an index),
// checks that committed pages still match the commands, and finds flag usages that --help
// would render wrongly (Lint). The reference comes from the commands themselves so that it
// cannot drift from the flags: each command's test regenerates it under -update-docs (which
// `go generate ./cmd/...` runs) and otherwise fails when the committed pages differ.
package clidoc
