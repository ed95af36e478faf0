package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/bytesize"
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
	store   bool
}

func (f *packFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "bundle path (default: <model name>.aneb; with --store and no -o, only the store gets it)")
	cmd.Flags().BoolVar(&f.store, "store", false, "add the bundle to the local store, where anerun runs it by name (Org/Name:f16, Org/Name:int4, ...)")
	cmd.Flags().StringVar(&f.dtype, "dtype", "f16", "storage type of linear weights: f16, f32 (CPU only), int8 or int4 (the LM head stays int8; untied embeddings f16, norms and biases f32)")
	cmd.Flags().IntVar(&f.group, "group-size", 0, "int4: inputs per scale and offset, 32, 64 or 128 (default 32)")
	cmd.Flags().BoolVar(&f.force, "force", false, "overwrite an existing output file")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors")
	cmd.Flags().IntSliceVar(&f.buckets, "ane-buckets", nil, "sequence-length buckets of the ANE prefill programs, multiples of 32 (default 32,64,128,256,512)")
	cmd.Flags().BoolVar(&f.noANE, "no-ane", false, "do not generate ANE programs (the bundle then runs on the CPU only)")
	cmd.Flags().IntVar(&f.lmRows, "lm-head-rows", 0, "most rows of one LM-head chunk, 64 to 65536 (default 32000, the widest conv known to run on the ANE)")
}

func runPack(cmd *cobra.Command, model string, f *packFlags, hf *hubFlags) error {
	ctx, cancel := cli.SignalContext(cmd.Context())
	defer cancel()
	start := time.Now()
	dest, err := planOutput(model, f)
	if err != nil {
		return err
	}
	defer dest.abort()
	src, err := resolveModel(ctx, model, hf, f.quiet)
	if err != nil {
		return err
	}
	var prog *cli.Progress
	res, err := pack.Pack(ctx, src.Dir, pack.Options{
		DType:        f.dtype,
		Output:       dest.path,
		Force:        f.force || dest.temp,
		Name:         src.Name,
		Provenance:   src.Provenance,
		KnownDigests: src.KnownDigests,
		ANESeqs:      f.buckets,
		NoPrograms:   f.noANE,
		LMHeadRows:   f.lmRows,
		GroupSize:    f.group,
		Progress: func(done, total int64) {
			if prog == nil {
				prog = cli.NewProgress("converting weights", total, true, f.quiet)
			}
			prog.Set(done, total)
		},
		Warn: func(msg string) { fmt.Fprintln(cli.Stderr(), "warning:", msg) },
	})
	if err != nil {
		return err
	}
	if prog != nil {
		prog.Finish()
	}
	if !f.quiet {
		m := res.Manifest
		what := res.Path
		if dest.temp {
			what = "the bundle"
		}
		fmt.Fprintf(cli.Stderr(), "wrote %s: %s, %s weights, %d tensors, %d ANE programs, %s in %.2fs\n",
			what, m.Model.Architecture, m.Model.DType, len(m.Tensors), len(m.Programs), bytesize.Format(res.Size), time.Since(start).Seconds())
	}
	out, err := dest.finish(ctx, res, src, f.quiet)
	if err != nil {
		return err
	}
	fmt.Println(out)
	return nil
}
