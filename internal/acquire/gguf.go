package acquire

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/anepack/anepack/internal/regfile"
)

// ggufMagic starts every GGUF file (llama.cpp's format).
var ggufMagic = []byte("GGUF")

// CheckNotGGUF returns an error saying what to do instead when path is a GGUF file (by its
// first bytes, or by its name when it cannot be read): anepack reads Hugging Face safetensors
// checkpoints, and people coming from llama.cpp or ollama reach for the .gguf they have.
func CheckNotGGUF(path string) error {
	if IsGGUF(path) {
		return fmt.Errorf("%s is a GGUF file (llama.cpp's format), which anepack does not read: point anepack at the model's safetensors repo on the Hugging Face Hub instead, e.g. `anepack Qwen/Qwen2.5-0.5B-Instruct`, or let anerun fetch and pack it: `anerun Qwen/Qwen2.5-0.5B-Instruct \"hi\"`", path)
	}
	return nil
}

// IsGGUF reports whether path is a GGUF file: it starts with the GGUF magic, or it cannot be
// read and is named *.gguf.
func IsGGUF(path string) bool {
	f, err := regfile.Open(path) // never blocks on a named pipe
	if err != nil {
		return strings.HasSuffix(strings.ToLower(path), ".gguf")
	}
	defer f.Close()
	head := make([]byte, len(ggufMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		return strings.HasSuffix(strings.ToLower(path), ".gguf")
	}
	return bytes.Equal(head, ggufMagic)
}
