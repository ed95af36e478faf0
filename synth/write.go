package synth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/fileutil"
)

// Options controls Write.
type Options struct {
	Seed uint64
	// Workers generating tensor data in parallel; 0 means all cores.
	Workers int
	// Progress, if set, is called with the bytes of tensor data written so far and the total.
	Progress func(done, total int64)
}

// tensorDesc is one tensor of the output file in header order.
type tensorDesc struct {
	arch.Tensor
	offset int64 // data offset relative to the start of the data block
	size   int64
}

// WriteSafetensors writes a BF16 safetensors file of the SYNTH-1 weights for cfg to w, streaming:
// memory use is a few MiB whatever the model size. Tensors are stored in name order.
// It stops with ctx's error when ctx is cancelled.
func WriteSafetensors(ctx context.Context, w io.Writer, cfg *arch.Config, opts Options) error {
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return err
	}
	specs := fam.CheckpointTensors(cfg) // what Hugging Face saves: each expert's matrices apart
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	descs := make([]tensorDesc, len(specs))
	var off int64
	for i, t := range specs {
		size := int64(arch.Elements(t.Shape)) * 2
		descs[i] = tensorDesc{Tensor: t, offset: off, size: size}
		off += size
	}
	header := safetensorsHeader(descs)
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	bw.Write(n[:])
	bw.Write(header)
	g := newGenerator(opts, off)
	for _, d := range descs {
		if err := g.tensor(ctx, bw, d); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// safetensorsHeader renders the JSON header padded with spaces to a multiple of 8 bytes, as the
// safetensors writers do, so the data block starts 8-byte aligned.
func safetensorsHeader(descs []tensorDesc) []byte {
	var b bytes.Buffer
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	for _, d := range descs {
		b.WriteByte(',')
		name, _ := json.Marshal(d.Name)
		b.Write(name)
		b.WriteString(`:{"dtype":"BF16","shape":[`)
		for i, s := range d.CheckpointShape() { // the element stream is row-major in this layout
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(s))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, d.offset, d.offset+d.size)
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes()
}

// generator fills tensors in parallel blocks and writes them in order.
type generator struct {
	seed     uint64
	workers  int
	progress func(done, total int64)
	done     int64
	total    int64
	bufs     [][]byte
}

const blockBytes = 1 << 20 // 512 Ki elements per block

func newGenerator(opts Options, total int64) *generator {
	w := opts.Workers
	if w <= 0 {
		w = goruntime.NumCPU()
	}
	g := &generator{seed: opts.Seed, workers: w, progress: opts.Progress, total: total}
	g.bufs = make([][]byte, 2*w)
	for i := range g.bufs {
		g.bufs[i] = make([]byte, blockBytes)
	}
	return g
}

// tensor generates one tensor, len(bufs) blocks at a time in parallel, writing them in order.
func (g *generator) tensor(ctx context.Context, w io.Writer, d tensorDesc) error {
	for start := int64(0); start < d.size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		var wg sync.WaitGroup
		batch := 0
		for ; batch < len(g.bufs) && start+int64(batch)*blockBytes < d.size; batch++ {
			lo := start + int64(batch)*blockBytes
			n := min(int64(blockBytes), d.size-lo)
			buf := g.bufs[batch][:n]
			wg.Add(1)
			go func() {
				defer wg.Done()
				fill(buf, d.Tensor, g.seed, int(lo/2))
			}()
		}
		wg.Wait()
		for i := 0; i < batch; i++ {
			lo := start + int64(i)*blockBytes
			n := min(int64(blockBytes), d.size-lo)
			if _, err := w.Write(g.bufs[i][:n]); err != nil {
				return err
			}
			g.done += n
		}
		start += int64(batch) * blockBytes
		if g.progress != nil {
			g.progress(g.done, g.total)
		}
	}
	return nil
}

// WriteCheckpoint writes a complete checkpoint directory: config.json exactly as given,
// model.safetensors with the SYNTH-1 weights, and the tokenizer files. Each file goes through a
// temp file, fsync and rename, so an interrupted run leaves no half-written file behind.
// tokenizerFiles maps file names (tokenizer.json, tokenizer_config.json, ...) to their bytes.
func WriteCheckpoint(ctx context.Context, dir string, configJSON []byte, tokenizerFiles map[string][]byte, opts Options) error {
	cfg, err := arch.ParseConfig(configJSON, "config.json")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCheckpointFile(filepath.Join(dir, "config.json"), func(w io.Writer) error {
		_, err := w.Write(configJSON)
		return err
	}); err != nil {
		return err
	}
	names := make([]string, 0, len(tokenizerFiles))
	for name := range tokenizerFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := tokenizerFiles[name]
		if err := writeCheckpointFile(filepath.Join(dir, name), func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		}); err != nil {
			return err
		}
	}
	return writeCheckpointFile(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		return WriteSafetensors(ctx, w, cfg, opts)
	})
}

// writeCheckpointFile writes one file of a checkpoint through a temp file, fsync and rename
// (fileutil.WriteAtomic); an error of write itself names the file.
func writeCheckpointFile(path string, write func(io.Writer) error) error {
	return fileutil.WriteAtomic(path, "", func(w *bufio.Writer) error {
		if err := write(w); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	})
}
