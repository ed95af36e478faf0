package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/pack"
)

// packFlags are the root command's flags.
type packFlags struct {
	output  string
	dtype   string
	force   bool
	quiet   bool
	buckets []int
	noANE   bool
	lmRows  int
	group   int
}

func (f *packFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "bundle path (default: <model name>.aneb)")
	cmd.Flags().StringVar(&f.dtype, "dtype", "f16", "storage type of linear weights: f16, f32 (CPU only), int8 or int4 (the LM head stays int8; untied embeddings f16, norms and biases f32)")
	cmd.Flags().IntVar(&f.group, "group-size", 0, "int4: inputs per scale and offset, 32, 64 or 128 (default 32)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite an existing output file")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	cmd.Flags().IntSliceVar(&f.buckets, "ane-buckets", nil, "sequence-length buckets of the ANE prefill kernels, multiples of 32 (default 32,64,128,256,512)")
	cmd.Flags().BoolVar(&f.noANE, "no-ane", false, "do not generate ANE kernels (the bundle then runs on the CPU only)")
	cmd.Flags().IntVar(&f.lmRows, "lm-head-rows", 0, "most rows of one LM-head chunk, 64 to 65536 (default 32000, the widest conv known to run on the ANE)")
}

func runPack(cmd *cobra.Command, model string, f *packFlags, hf *hubFlags) error {
	ctx, cancel := cli.SignalContext(cmd.Context())
	defer cancel()
	start := time.Now()
	src, err := resolveModel(ctx, model, hf, f.quiet)
	if err != nil {
		return err
	}
	var prog *cli.Progress
	res, err := pack.Pack(ctx, src.Dir, pack.Options{
		DType:        f.dtype,
		Output:       f.output,
		Force:        f.force,
		Name:         src.Name,
		Provenance:   src.Provenance,
		KnownDigests: src.KnownDigests,
		ANESeqs:      f.buckets,
		NoKernels:    f.noANE,
		LMHeadRows:   f.lmRows,
		GroupSize:    f.group,
		Progress: func(done, total int64) {
			if prog == nil {
				prog = cli.NewProgress("converting weights", total, true, f.quiet)
			}
			prog.Set(done, total)
		},
		Warn: func(msg string) { fmt.Fprintln(os.Stderr, "warning:", msg) },
	})
	if err != nil {
		return err
	}
	if prog != nil {
		prog.Finish()
	}
	if !f.quiet {
		m := res.Manifest
		fmt.Fprintf(os.Stderr, "wrote %s: %s, %s weights, %d tensors, %d ANE kernels, %s in %.2fs\n",
			res.Path, m.Model.Architecture, m.Model.DType, len(m.Tensors), len(m.Kernels), cli.FormatBytes(res.Size), time.Since(start).Seconds())
	}
	fmt.Println(res.Path)
	return nil
}
