package main

import (
	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/version"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/runtime/kernels"
)

// newVersionCmd is `anerun version`: what --version prints, as a command.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go toolchain and CPU kernel features",
		Args:  cli.Args(0),
		Run: func(cmd *cobra.Command, args []string) {
			versionInfo().Write(cmd.OutOrStdout())
		},
	}
}

// versionInfo is what `anerun version` and --version print.
func versionInfo() version.Info {
	return version.Get("anerun", pack.Version, format.VersionString(), kernels.HasAsm())
}
