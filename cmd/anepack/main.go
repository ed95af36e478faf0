package main

import "github.com/anepack/anepack/internal/cli"

func main() { cli.Main("anepack", newRootCmd()) }
