package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
)

func newInspectCmd() *cobra.Command {
	var asJSON, tensors bool
	cmd := &cobra.Command{
		Use:   "inspect BUNDLE",
		Short: "Show what a bundle holds: model, sections, tensors, tokenizer and provenance",
		Args:  cli.Args(0, "BUNDLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBundle(args[0])
			if err != nil {
				return err
			}
			defer b.Close()
			if asJSON {
				return inspectJSON(b)
			}
			return inspectTable(b, tensors)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print header, sections and manifest as JSON")
	cmd.Flags().BoolVar(&tensors, "tensors", false, "also list every tensor view")
	return cmd
}

// inspectDoc is the --json output.
type inspectDoc struct {
	Format     string           `json:"format_version"`
	RootDigest string           `json:"root_digest"`
	FileSize   int64            `json:"file_size"`
	Sections   []inspectSection `json:"sections"`
	Manifest   *format.Manifest `json:"manifest"`
}

type inspectSection struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	SHA256 string `json:"sha256"`
}

func inspectJSON(b *format.Bundle) error {
	h := b.Header()
	doc := inspectDoc{Format: h.Version(), RootDigest: h.RootDigestString(), FileSize: int64(h.FileSize), Manifest: b.Manifest()}
	for _, s := range b.Sections() {
		doc.Sections = append(doc.Sections, inspectSection{Kind: s.Kind.String(), Name: s.Name, Offset: s.Offset, Length: s.Length, SHA256: s.DigestString()})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func inspectTable(b *format.Bundle, listTensors bool) error {
	h := b.Header()
	m := b.Manifest()
	out := os.Stdout
	// Every name below is the bundle's maker's: q escapes what a terminal would act on.
	q := cli.Printable
	fmt.Fprintf(out, "format      %s (producer %s)\n", h.Version(), q(m.Producer))
	fmt.Fprintf(out, "size        %s\n", bytesize.Format(int64(h.FileSize)))
	fmt.Fprintf(out, "root digest %s\n", h.RootDigestString())
	fmt.Fprintf(out, "model       %s (%s), %s weights, %.1fM parameters\n", q(m.Model.Name), q(m.Model.Architecture), q(m.Model.DType), float64(m.Model.Parameters)/1e6)
	var cfg map[string]any
	if json.Unmarshal(m.Model.Config, &cfg) == nil {
		v := func(k string) string { return q(fmt.Sprint(cfg[k])) }
		fmt.Fprintf(out, "shape       hidden %s, intermediate %s, layers %s, heads %s/%s kv, vocab %s, tied %s\n",
			v("hidden_size"), v("intermediate_size"), v("num_hidden_layers"), v("num_attention_heads"),
			v("num_key_value_heads"), v("vocab_size"), v("tie_word_embeddings"))
	}
	if m.Tokenizer != nil {
		writeLines(out, "tokenizer", tokenizerLines(m.Tokenizer.Info))
	}
	writeLines(out, "generation", generationLines(m.Generation))
	p := m.Provenance
	src := p.Source
	if p.Repo != "" {
		src += " " + p.Repo
		if p.Revision != "" {
			src += "@" + p.Revision
		}
		if p.Commit != "" {
			src += " (commit " + p.Commit + ")"
		}
	}
	fmt.Fprintf(out, "source      %s\n", q(src))
	for _, f := range p.Files {
		fmt.Fprintf(out, "            %-40s %10s  sha256:%s\n", q(f.Name), bytesize.Format(f.Size), q(f.SHA256))
	}
	if c := m.Conversion; c != nil {
		fmt.Fprintf(out, "conversion  from %s: %d overflow(s) to Inf, %d subnormal(s), %d underflow(s) to 0\n", q(c.SourceDType), c.Overflows, c.Subnormals, c.Underflows)
	}
	fmt.Fprintf(out, "programs    %d ANE program(s)\n", len(m.Programs))
	fmt.Fprintf(out, "\nsections (%d):\n", len(b.Sections()))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tname\toffset\tsize\tsha256\t")
	for _, s := range b.Sections() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", s.Kind, q(s.Name), s.Offset, bytesize.Format(s.Length), s.DigestString()[:19])
	}
	tw.Flush()
	if listTensors {
		fmt.Fprintf(out, "\ntensors (%d):\n", len(m.Tensors))
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "name\tdtype\tshape\tstorage")
		for _, t := range m.Tensors {
			var where []string
			for _, p := range t.Parts {
				where = append(where, fmt.Sprintf("%s+%d", q(p.Section), p.Offset))
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", q(t.Name), q(t.DType), t.Shape, strings.Join(where, ", "))
		}
		tw.Flush()
	}
	return nil
}
