package main

import (
	"fmt"
	"os"
	goruntime "runtime"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/affinity"
	"github.com/anepack/anepack/runtime/kernels"
)

// isaEnv names the environment variable that supplies --isa's default, so that a script
// (bench/compare_llama.sh) or a service can cap the kernels of every anerun it starts.
const isaEnv = "ANERUN_ISA"

// isaLevelsHelp lists the levels of kernels.ISALevels on each build, best first.
const isaLevelsHelp = "amx, avx512, avx2, go on amd64; dotprod, neon, go on arm64; go elsewhere"

// registerCPUFlags adds the flags every command takes about the CPU it runs on, applied before
// the command runs:
//   - --isa: the CPU kernels go no higher than that instruction-set level (kernels.LimitISA);
//   - --cpus: the process runs on those CPUs only (affinity.Pin), with one Go P per CPU, and
//     --threads defaults to the number of cores among them.
func registerCPUFlags(root *cobra.Command) {
	var level, cpus string
	pf := root.PersistentFlags()
	// The usage names the levels of every build and the variable, not their values here, so
	// that --help (and the reference generated from it) reads the same on every machine.
	pf.StringVar(&level, "isa", "", "use CPU kernels up to this instruction-set level, for measuring a smaller CPU of this kind or avoiding a kernel: "+
		isaLevelsHelp+" (default: $"+isaEnv+", else the best the CPU has)")
	pf.StringVar(&cpus, "cpus", "", "run on these CPUs only, e.g. 0-3,8 (Linux; as taskset -c): the scheduler no longer moves the threads between all cores, which steadies runs with fewer threads than cores; --threads defaults to the number of cores among them")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		from := "--isa"
		if !cmd.Flags().Changed("isa") {
			level, from = os.Getenv(isaEnv), "$"+isaEnv
		}
		if level != "" {
			if err := kernels.LimitISA(level); err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
		}
		if cpus != "" {
			list, err := affinity.Parse(cpus)
			if err == nil {
				err = affinity.Pin(list)
			}
			if err != nil {
				return fmt.Errorf("--cpus: %w", err)
			}
			goruntime.GOMAXPROCS(len(list))
		}
		return nil
	}
}

// cpuList is the CPUs this process may run on, as a CPU list ("" if the system will not say).
func cpuList() string {
	cpus, err := affinity.Allowed()
	if err != nil {
		return ""
	}
	return affinity.Format(cpus)
}

// defaultThreads is --threads' default: one per physical core this process may run on, and on a
// hybrid CPU per performance core (affinity.Cores), as llama.cpp and ollama default to; never
// more than GOMAXPROCS, the CPUs the Go runtime uses, which follows --cpus and a container's CPU
// limit; one per CPU where the system does not describe its cores.
func defaultThreads() int {
	n, procs := affinity.Cores(), goruntime.GOMAXPROCS(0)
	if n <= 0 || n > procs {
		return procs
	}
	return n
}
