package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/runtime/kernels"
)

// maxISAEnv names the environment variable that supplies --max-isa's default, so that a script
// (bench/compare_llama.sh) or a service can cap the kernels of every anerun it starts.
const maxISAEnv = "ANERUN_MAX_ISA"

// registerMaxISA adds --max-isa to every command: the CPU kernels go no higher than that
// instruction-set level (kernels.LimitISA), applied before the command runs.
func registerMaxISA(root *cobra.Command) {
	var level string
	root.PersistentFlags().StringVar(&level, "max-isa", os.Getenv(maxISAEnv), fmt.Sprintf(
		"use CPU kernels up to this instruction-set level: %s; for measuring a smaller CPU of this kind or avoiding a kernel (default $%s, else the best the CPU has)",
		strings.Join(kernels.ISALevels(), ", "), maxISAEnv))
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if level == "" {
			return nil
		}
		if err := kernels.LimitISA(level); err != nil {
			from := "--max-isa"
			if !cmd.Flags().Changed("max-isa") {
				from = "$" + maxISAEnv
			}
			return fmt.Errorf("%s: %w", from, err)
		}
		return nil
	}
}
