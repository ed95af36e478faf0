package main

// The command-line reference in docs/cli is generated from these commands by their test
// (clidoc_test.go), which otherwise fails when the committed pages differ from the commands.
//go:generate go test -run=^TestCLIReference$ -update-docs
