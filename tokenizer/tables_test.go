package tokenizer

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func synthBlob(tb testing.TB) []byte {
	blob, _, err := Compile(synthTokenizer(tb, nil), []byte(synthConfig))
	if err != nil {
		tb.Fatal(err)
	}
	return blob
}

// refreshCRC recomputes the checksum so a deliberately damaged blob reaches the structural checks.
func refreshCRC(b []byte) {
	if len(b) >= headerSize {
		binary.LittleEndian.PutUint32(b[16:], tablesCRC(b))
	}
}

func TestCompiledTablesRoundTrip(t *testing.T) {
	_, _, blob := qwenFiles(t)
	tk, err := Load(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.t.deepCheck(); err != nil {
		t.Fatal(err)
	}
	if in := tk.Info(); in.TablesBytes != len(blob) || in.Format != "anetok" || in.FormatVersion != 1 {
		t.Fatalf("Info = %+v", in)
	}
	// Load must not depend on the blob's address: an odd-aligned copy converts the u32 sections.
	shifted := make([]byte, len(blob)+1)[1:]
	copy(shifted, blob)
	tk2, err := Load(shifted)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := tk.Encode("Hello, world! 中文"), tk2.Encode("Hello, world! 中文"); len(a) != len(b) {
		t.Fatalf("unaligned load encodes differently: %v vs %v", a, b)
	}
}

func TestCorruptTables(t *testing.T) {
	blob := synthBlob(t)
	mutate := func(f func(b []byte) []byte, fixCRC bool) error {
		b := f(append([]byte(nil), blob...))
		if fixCRC {
			refreshCRC(b)
		}
		_, err := Load(b)
		return err
	}
	put := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	secOff := func(id int) int { // offset of section id's entry in the section table
		for i := 0; i < int(u32(blob, 64)); i++ {
			if int(u32(blob, headerSize+i*16)) == id {
				return headerSize + i*16
			}
		}
		t.Fatalf("no section %d", id)
		return 0
	}
	cases := []struct {
		name   string
		f      func([]byte) []byte
		fixCRC bool
		want   string
	}{
		{"empty", func(b []byte) []byte { return nil }, false, "shorter than the 72-byte header"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-8] }, false, "header says"},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, false, "bad magic"},
		{"version", put(8, 3), false, "format version 3"},
		{"v2 feature in v1", put(20, flagByteFallback|flagSpaceToMeta), true, "for format version 1"},
		{"v1 with qwen3.5 kind", put(24, uint32(preQwen35)), true, "needs format version 2"},
		{"v1 with o200k kind", put(24, uint32(preO200k)), true, "needs format version 2"},
		{"bit flip", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, false, "CRC-32C mismatch"},
		{"vocab size", put(32, 0), true, "vocab size 0"},
		{"flags", put(20, 1<<9), true, "unknown header flags"},
		{"pre kind", put(24, 9), true, "unknown pre-tokenizer kind 9"},
		{"eos id", put(52, 1<<20), true, "special id 1048576 (eos) outside vocab"},
		{"section count", put(64, 1000), true, "section table of 1000 entries"},
		{"section bounds", put(secOff(secTokenBytes)+8, 1<<30), true, "outside the blob"},
		{"section id", put(secOff(secPost), 99), true, "unknown section id 99"},
		{"duplicate section", put(secOff(secPost), secMerges), true, "appears twice"},
		{"missing section", put(64, 10), true, "required section 8 missing"},
		{"merge capacity", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[u32(b, secOff(secMerges)+4):], 3)
			return b
		}, true, "merges capacity 3 is not a power of two"},
		{"merge full", func(b []byte) []byte {
			o := u32(b, secOff(secMerges)+4)
			binary.LittleEndian.PutUint32(b[o+4:], u32(b, int(o)))
			return b
		}, true, "needs a free slot"},
		{"merge id", func(b []byte) []byte {
			o := int(u32(b, secOff(secMerges)+4)) + 8
			for u32(b, o) == noID {
				o += 16
			}
			binary.LittleEndian.PutUint32(b[o+12:], 1<<29)
			return b
		}, true, "out of range"},
		{"token offsets", func(b []byte) []byte {
			o := int(u32(b, secOff(secTokenOffsets)+4))
			binary.LittleEndian.PutUint32(b[o+40:], 1<<30)
			return b
		}, true, "token offsets decrease"},
		{"byte ids", func(b []byte) []byte {
			o := int(u32(b, secOff(secByteIDs)+4))
			binary.LittleEndian.PutUint32(b[o+4*65:], 66)
			return b
		}, true, "byte 0x41 maps to id 66"},
		{"added string", func(b []byte) []byte {
			o := int(u32(b, secOff(secAdded)+4))
			binary.LittleEndian.PutUint32(b[o+12:], 1<<30)
			return b
		}, true, "outside the strings section"},
	}
	for _, c := range cases {
		err := mutate(c.f, c.fixCRC)
		var ce *CorruptTablesError
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want a CorruptTablesError containing %q", c.name, err, c.want)
		}
	}
}

// TestRandomCorruption flips bytes all over the blob (with the CRC recomputed, so the structural
// checks are what stands between the damage and a panic) and uses whatever still loads.
func TestRandomCorruption(t *testing.T) {
	spBlob, _, err := Compile(synthSPTokenizer(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, blob := range [][]byte{synthBlob(t), spBlob} {
		r := rand.New(rand.NewPCG(5, 6))
		for i := 0; i < 3000; i++ {
			b := append([]byte(nil), blob...)
			for n := 1 + r.IntN(4); n > 0; n-- {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
			refreshCRC(b)
			exerciseTables(t, b)
		}
	}
}

// exerciseTables loads b without the CRC check and, if it loads, runs every entry point.
func exerciseTables(t *testing.T, b []byte) {
	tk, err := load(b, false)
	if err != nil {
		return
	}
	_ = tk.t.deepCheck()
	for _, s := range []string{"hello world", "<|end|> café word <L> <R>", "\xff\xfe 中文 12345", ""} {
		ids := tk.Encode(s)
		_ = tk.Decode(ids)
		ids = tk.EncodeWithSpecials(s, EncodeOptions{SplitSpecialTokens: true, AddSpecialTokens: true})
		d := tk.NewStreamDecoder(DecodeOptions{SkipSpecialTokens: true})
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
	for id := -1; id <= tk.VocabSize(); id++ {
		tk.Token(id)
		tk.TokenBytes(id)
	}
	tk.TokenID("hello")
	_ = tk.Info()
	_, _ = tk.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, ChatOptions{AddGenerationPrompt: true})
}

// FuzzLoad: arbitrary bytes never make Load (or a Tokenizer loaded from them) panic. The CRC is
// skipped so that mutations reach the structural validation; seeds are in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	blob := synthBlob(f)
	f.Add(blob)
	f.Add(blob[:headerSize+64])
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Load(b) // with the CRC check: must fail cleanly or succeed
		exerciseTables(t, b)
	})
}

// TestFuzzLoadSeedsPresent keeps the committed seed corpus honest: it must exist and hold a blob
// that loads, so fuzzing starts from valid tables.
func TestFuzzLoadSeedsPresent(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzLoad"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("seed corpus testdata/fuzz/FuzzLoad missing: %v", err)
	}
}
