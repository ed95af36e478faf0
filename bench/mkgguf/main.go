// Command mkgguf writes a llama.cpp GGUF file (F16, BF16 or F32) of a Hugging Face safetensors
// checkpoint, with the metadata keys, tensor names and tensor layouts llama.cpp's own converter
// (convert_hf_to_gguf.py) writes, so that llama.cpp runs the very weights an anepack bundle is
// packed from. The benchmarks compare against llama.cpp through it; llama-quantize makes the
// quantized peers (Q8_0, Q4_0, Q4_K_M) from its output.
//
//	go run ./bench/mkgguf CKPT_DIR OUT.gguf [f16|bf16|f32]
//
// The default type is f16. As in llama.cpp's converter, norms, biases and every 1-D tensor are
// F32 whatever the type. Supported architectures: Qwen2ForCausalLM, Qwen3ForCausalLM and
// LlamaForCausalLM (Llama 3 and its RoPE scaling); the tokenizer must be a byte-level BPE
// tokenizer.json llama.cpp knows (Qwen2's, Llama 3's or GPT-2's pre-tokenizer). OUT.gguf is
// written through a temporary file and renamed: a failed run leaves nothing behind.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
)

const usage = `usage: go run ./bench/mkgguf CKPT_DIR OUT.gguf [f16|bf16|f32]

Writes a llama.cpp GGUF of the Hugging Face safetensors checkpoint CKPT_DIR (config.json,
model.safetensors or its shards, tokenizer.json, tokenizer_config.json). The type (default f16)
applies to the 2-D weights; norms and biases are F32, as llama.cpp's converter writes them.
`

// errUsage marks command-line mistakes (exit status 2, with the usage text).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status (0, 1 for a failed conversion, 2 for bad
// arguments).
func run(args []string, stdout, stderr io.Writer) int {
	err := convertCmd(args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "mkgguf: %v\n\n%s", err, usage)
		return 2
	}
	fmt.Fprintf(stderr, "mkgguf: %v\n", err)
	return 1
}

func convertCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("%w: expected 2 or 3 arguments, got %d", errUsage, len(args))
	}
	dir, out := args[0], args[1]
	typ := "f16"
	if len(args) == 3 {
		typ = args[2]
	}
	ft, ok := fileTypes[strings.ToLower(typ)]
	if !ok {
		return fmt.Errorf("%w: type %q is not one mkgguf writes; expected f16, bf16 or f32", errUsage, typ)
	}
	start := time.Now()
	m, err := openModel(dir, ft)
	if err != nil {
		return err
	}
	defer m.Close()
	for _, w := range m.warnings {
		fmt.Fprintf(stderr, "mkgguf: warning: %s\n", w)
	}
	var n int64
	err = fileutil.WriteAtomic(out, "", func(w *bufio.Writer) error {
		var err error
		n, err = m.file.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if st := m.conv.Stats; st.Overflow != 0 || st.NaN != 0 {
		fmt.Fprintf(stderr, "mkgguf: warning: %d weights overflowed F16 (now ±Inf), %d were NaN\n", st.Overflow, st.NaN)
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d tensors, %d metadata keys, %.1f MB in %.1fs\n",
		out, m.arch, len(m.file.Tensors), len(m.file.KVs), float64(n)/1e6, time.Since(start).Seconds())
	return nil
}
