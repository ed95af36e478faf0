package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/version"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/backend"
	"github.com/anepack/anepack/runtime/kernels"
)

// doctorReport is what `anerun doctor` finds; --json prints it as is.
type doctorReport struct {
	OS        string `json:"os"`   // GOOS
	Arch      string `json:"arch"` // GOARCH
	OSVersion string `json:"os_version,omitempty"`
	OSBuild   string `json:"os_build,omitempty"` // kern.osversion: the self-test's key
	Chip      string `json:"chip,omitempty"`
	CPUs      int    `json:"cpus"`
	// CPUList is the CPUs this process may run on now (taskset, --cpus), as a CPU list.
	CPUList string `json:"cpu_list"`
	// Threads is --threads' default here: one per physical core among CPUList (defaultThreads).
	Threads     int      `json:"threads"`
	Go          string   `json:"go"`
	CPUFeatures []string `json:"cpu_features"` // the features the CPU kernels can use that this CPU has
	CPUKernels  string   `json:"cpu_kernels"`  // "assembly" or "go"
	// ISA is the best instruction-set level the kernels use (kernels.ISA), ISALevels those
	// --isa takes here, best first.
	ISA       string   `json:"isa"`
	ISALevels []string `json:"isa_levels"`
	// Kernels names the kernel each CPU operation uses here (kernels.Kernels).
	Kernels []kernels.Kernel `json:"kernels"`
	ANE     struct {
		Available     bool     `json:"available"`
		Framework     bool     `json:"framework"`
		Classes       []string `json:"classes"`
		Missing       []string `json:"missing"`
		Reason        string   `json:"reason,omitempty"`
		CompileBudget int      `json:"compile_budget"`
		// CompileCache is where compiled programs are kept between runs.
		CompileCache struct {
			Dir      string `json:"dir"`
			Programs int    `json:"programs"`
			Bytes    int64  `json:"bytes"`
		} `json:"compile_cache"`
		// SelfTest is this OS build's self-test record, if it ran.
		SelfTest     *ane.SelfTestRecord `json:"self_test,omitempty"`
		SelfTestFile string              `json:"self_test_file,omitempty"`
	} `json:"ane"`
	Auto       string `json:"auto"` // the backend --backend auto picks
	AutoReason string `json:"auto_reason"`
	// Architectures lists the model families this anerun runs (config.json's architectures).
	Architectures []string       `json:"architectures"`
	Bundle        *doctorBundle  `json:"bundle,omitempty"`
	Backends      []doctorOption `json:"backends"`
}

// doctorBundle describes a bundle's ANE programs and the buckets a run would use.
type doctorBundle struct {
	Path     string `json:"path"`
	Programs int    `json:"programs"`
	Buckets  []int  `json:"buckets,omitempty"`  // layer buckets planned within the compile budget
	LMHead   []int  `json:"lm_head,omitempty"`  // LM-head buckets planned
	Compiles int    `json:"compiles,omitempty"` // programs of the planned buckets (decode on the ANE)
	Problem  string `json:"problem,omitempty"`  // why the ane/sim backends cannot run it
}

// doctorOption is one --backend value and whether it can run here.
type doctorOption struct {
	Name   string `json:"name"`
	Usable bool   `json:"usable"`
	Note   string `json:"note"`
}

func newDoctorCmd() *cobra.Command {
	var asJSON, probe, clearCache, selfTest bool
	cmd := &cobra.Command{
		Use:   "doctor [MODEL] [--json] [--probe] [--clear-cache]",
		Short: "Report the machine: OS, chip, CPU kernels, whether the Apple Neural Engine can be used",
		Long: `doctor reports the OS and chip, the CPU features the CPU kernels use, whether
AppleNeuralEngine.framework loads and its private classes resolve (no program is compiled), the
compile cache, the ANE self-test's record, and which backend --backend auto picks. With a
bundle, it also lists the bundle's ANE programs and the buckets a run would use within the ANE's
compile budget.

--probe compiles and runs a set of test programs on the ANE (twice: the second pass must load
everything from the compile cache) and prints a table and a JSON report to paste into an issue;
where there is no ANE it runs the same programs in the simulator. --clear-cache removes the
compiled programs kept between runs and the self-test records, so that everything is compiled
and tested again.`,
		Example: `  anerun doctor
  anerun doctor qwen.aneb --json
  anerun doctor --probe
  anerun doctor --clear-cache`,
		Args: cli.Args(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case selfTest:
				return backend.WriteSelfTest(cmd.OutOrStdout())
			case clearCache:
				return clearCompileCache(cmd.OutOrStdout())
			case probe:
				return runProbe(cmd.OutOrStdout(), cmd.ErrOrStderr(), asJSON)
			}
			r := doctor()
			if len(args) == 1 {
				b, err := doctorInspect(args[0])
				if err != nil {
					return err
				}
				r.Bundle = b
				r.Auto, r.AutoReason = backend.Predict(ane.Probe(), b.Problem == "", r.ANE.SelfTest)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			r.print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&probe, "probe", false, "compile and run test programs on the ANE (in the simulator where there is none) and print a report for an issue")
	f.BoolVar(&clearCache, "clear-cache", false, "remove the ANE programs compiled by earlier runs and the self-test records")
	f.BoolVar(&selfTest, "self-test", false, "run the ANE self-test in this process and print its record (what --backend auto runs in a child process)")
	f.MarkHidden("self-test")
	return cmd
}

// stagingRoot is where the driver stages programs and keeps them compiled: the framework's
// NSTemporaryDirectory() where the ANE driver opens, else the OS temporary directory.
func stagingRoot() string {
	if d, err := ane.Open(); err == nil {
		return d.StagingRoot()
	}
	return os.TempDir()
}

// clearCompileCache is `anerun doctor --clear-cache`.
func clearCompileCache(w io.Writer) error {
	root := stagingRoot()
	n, size, err := ane.ClearCache(root)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "compile cache: removed %d compiled programs (%s) from %s\n", n, formatBytes(size), root)
	cache, err := backend.SelfTests("")
	if err != nil {
		return err
	}
	if err := cache.Remove(); err != nil {
		return err
	}
	fmt.Fprintf(w, "self-test: removed %s; the next --backend auto run tests the ANE again\n", cache.Path)
	return nil
}

// formatBytes writes a size in MiB, or bytes when small.
func formatBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// doctor probes the machine.
func doctor() *doctorReport {
	p := ane.Probe()
	r := &doctorReport{OS: goruntime.GOOS, Arch: goruntime.GOARCH, OSVersion: p.OS, OSBuild: p.OSBuild, Chip: p.Chip,
		CPUs: goruntime.NumCPU(), Go: goruntime.Version(), CPUFeatures: version.CPUFeatures(), CPUKernels: "go"}
	if r.OSVersion == goruntime.GOOS+"/"+goruntime.GOARCH {
		r.OSVersion = "" // the stub's placeholder says nothing more
	}
	if r.Chip == "" {
		r.Chip = cpuModel()
	}
	if kernels.HasAsm() {
		r.CPUKernels = "assembly"
	}
	r.Kernels = kernels.Kernels()
	r.ISA, r.ISALevels = kernels.ISA(), kernels.ISALevels()
	r.CPUList, r.Threads = cpuList(), defaultThreads()
	r.ANE.Available, r.ANE.Framework, r.ANE.Reason = p.Available, p.Framework, p.Reason
	r.ANE.Classes, r.ANE.Missing = nonNil(p.Classes), nonNil(p.Missing)
	r.ANE.CompileBudget = ane.MaxCompiles
	root := stagingRoot()
	r.ANE.CompileCache.Dir = root
	r.ANE.CompileCache.Programs, r.ANE.CompileCache.Bytes = ane.CacheSize(root)
	if cache, err := backend.SelfTests(""); err == nil {
		r.ANE.SelfTestFile = cache.Path
		if rec, ok, _ := cache.LookupHost(p); ok {
			r.ANE.SelfTest = &rec
		}
	}
	r.Auto, r.AutoReason = backend.Predict(p, true, r.ANE.SelfTest)
	r.Architectures = arch.Supported()
	aneNote := "the bundle's programs on the Neural Engine"
	if !p.Available {
		aneNote = "unavailable: " + p.Reason
	}
	r.Backends = []doctorOption{
		{"cpu", true, fmt.Sprintf("float32 on %d threads, %s kernels", r.Threads, r.CPUKernels)},
		{"ane", p.Available, aneNote},
		{"sim", true, "the ANE programs in the MIL simulator (slow; for checking)"},
	}
	return r
}

// doctorInspect opens a bundle and plans its programs the way the ane backend would, without
// loading any (the sim evaluator plans exactly as the ANE's does).
func doctorInspect(arg string) (*doctorBundle, error) {
	path, err := (&modelFlags{}).resolve(arg)
	if err != nil {
		return nil, err
	}
	m, err := runtime.Open(path)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	d := &doctorBundle{Path: path, Programs: len(m.Manifest().Programs)}
	b, err := ane.New(m, ane.Options{Eval: ane.EvalSim, Threads: 1})
	if err != nil {
		if !errors.Is(err, ane.ErrNoPrograms) {
			d.Problem = err.Error()
		} else {
			d.Problem = "no ANE programs: pack it again without --no-ane"
		}
		return d, nil
	}
	defer b.Close()
	s := b.Stats()
	d.Buckets, d.LMHead, d.Compiles = s.Buckets, s.LMHeadBuckets, s.Planned
	return d, nil
}

func (r *doctorReport) print(w io.Writer) {
	sys := r.OS + "/" + r.Arch
	if r.OSVersion != "" {
		sys += " (" + r.OSVersion
		if r.OSBuild != "" {
			sys += ", build " + r.OSBuild
		}
		sys += ")"
	}
	fmt.Fprintf(w, "system:    %s, %s\n", sys, r.Go)
	if r.Chip != "" {
		fmt.Fprintf(w, "chip:      %s\n", r.Chip)
	}
	feat := "none of those the kernels use"
	if len(r.CPUFeatures) > 0 {
		feat = strings.Join(r.CPUFeatures, " ")
	}
	fmt.Fprintf(w, "cpu:       %d CPUs (this process on %s; %d threads by default, one per core); features %s; CPU kernels in %s\n", r.CPUs, r.CPUList, r.Threads, feat, r.CPUKernels)
	fmt.Fprintf(w, "           kernels up to %s (--isa takes %s)\n", r.ISA, strings.Join(r.ISALevels, ", "))
	for _, k := range r.Kernels {
		fmt.Fprintf(w, "           %-36s %s\n", k.Op+":", k.Impl)
	}
	if r.ANE.Available {
		fmt.Fprintf(w, "ane:       available (AppleNeuralEngine.framework loaded; classes %s)\n", strings.Join(r.ANE.Classes, ", "))
	} else {
		fmt.Fprintf(w, "ane:       unavailable: %s\n", r.ANE.Reason)
		if r.ANE.Framework {
			fmt.Fprintf(w, "           framework loaded; classes resolved: %s; missing: %s\n", strings.Join(r.ANE.Classes, ", "), strings.Join(r.ANE.Missing, ", "))
		}
	}
	fmt.Fprintf(w, "           compile budget %d programs per process; compile cache %s: %d programs, %s\n",
		r.ANE.CompileBudget, r.ANE.CompileCache.Dir, r.ANE.CompileCache.Programs, formatBytes(r.ANE.CompileCache.Bytes))
	switch st := r.ANE.SelfTest; {
	case st == nil && r.ANE.Available:
		fmt.Fprintln(w, "           self-test: not run on this OS build yet (the first --backend auto run does it)")
	case st != nil && st.Passed:
		fmt.Fprintf(w, "           self-test: passed on %s (blob layout %s)\n", st.When.Local().Format("2006-01-02"), st.BlobLayout)
	case st != nil:
		fmt.Fprintf(w, "           self-test: failed on %s: %s\n", st.When.Local().Format("2006-01-02"), st.Reason)
	}
	for _, o := range r.Backends {
		mark := "yes"
		if !o.Usable {
			mark = "no "
		}
		fmt.Fprintf(w, "backend:   %-4s %s  %s\n", o.Name, mark, o.Note)
	}
	if b := r.Bundle; b != nil {
		if b.Problem != "" {
			fmt.Fprintf(w, "bundle:    %s: %d ANE programs; %s\n", b.Path, b.Programs, b.Problem)
		} else {
			fmt.Fprintf(w, "bundle:    %s: %d ANE programs; a run uses buckets %v and LM-head buckets %v: at most %d compiles\n",
				b.Path, b.Programs, b.Buckets, b.LMHead, b.Compiles)
		}
	}
	fmt.Fprintf(w, "auto:      %s (%s)\n", r.Auto, r.AutoReason)
	fmt.Fprintf(w, "models:    %s\n", strings.Join(r.Architectures, ", "))
}

// cpuModel reads the CPU's model name on Linux (macOS reports it through ane.Probe).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
