package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nlpodyssey/safetensors"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/regfile"
)

// MaxHeaderSize bounds a safetensors JSON header (the format's reference implementation uses
// 100 MB); a larger length field is refused before anything is allocated.
const MaxHeaderSize = 100 << 20

// ErrFormat is wrapped by every error about a malformed safetensors file.
var ErrFormat = errors.New("malformed safetensors file")

// FileError reports a problem with one checkpoint file, naming it, the tensor or field, and
// what was expected.
type FileError struct {
	File   string // path as given
	Tensor string // tensor name, if the problem is about one tensor
	Msg    string
	Err    error // wrapped cause, if any
}

func (e *FileError) Error() string {
	s := e.File + ": "
	if e.Tensor != "" {
		s += "tensor " + e.Tensor + ": "
	}
	return s + e.Msg
}

func (e *FileError) Unwrap() error { return e.Err }

// TensorRef is one tensor of a checkpoint: its header entry and its bytes inside the mapping.
type TensorRef struct {
	Name  string
	File  string      // the file it lives in
	DType dtype.DType // Invalid for a type anepack does not read
	// RawDType is the header's spelling, e.g. "BOOL", for messages.
	RawDType string
	Shape    []int
	Data     []byte // little-endian elements, a sub-slice of the file mapping
}

// stFile is one mapped safetensors file.
type stFile struct {
	path string
	data []byte
}

// openSafetensors maps path and parses its header. It checks the length field before trusting
// it, finds duplicate tensor names (which JSON decoding would silently merge) and unknown dtypes
// (naming the tensor), and lets the safetensors package validate offsets and sizes.
func openSafetensors(path string) (*stFile, []TensorRef, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := fi.Size()
	if err := checkHeaderLength(path, f, size); err != nil {
		return nil, nil, err
	}
	data, err := fileutil.Map(f, size)
	if err != nil {
		return nil, nil, &FileError{File: path, Msg: "mapping the file: " + err.Error(), Err: err}
	}
	refs, err := parseFile(path, data)
	if err != nil {
		fileutil.Unmap(data)
		return nil, nil, err
	}
	return &stFile{path: path, data: data}, refs, nil
}

// checkHeaderLength reads the 8-byte length field and checks it against the file size before
// anything is mapped or allocated.
func checkHeaderLength(path string, f *os.File, size int64) error {
	if size < 8 {
		return &FileError{File: path, Msg: fmt.Sprintf("file is %d bytes; a safetensors file starts with an 8-byte header length", size), Err: ErrFormat}
	}
	var lenBuf [8]byte
	if _, err := f.ReadAt(lenBuf[:], 0); err != nil {
		return &FileError{File: path, Msg: "reading the header length: " + err.Error(), Err: ErrFormat}
	}
	return checkLength(path, binary.LittleEndian.Uint64(lenBuf[:]), size)
}

func checkLength(path string, n uint64, size int64) error {
	if n > MaxHeaderSize {
		return &FileError{File: path, Msg: fmt.Sprintf("header length %d is absurd; expected at most %d bytes", n, MaxHeaderSize), Err: ErrFormat}
	}
	if int64(n) > size-8 {
		return &FileError{File: path, Msg: fmt.Sprintf("header length %d is larger than the %d bytes after it (truncated file?)", n, size-8), Err: ErrFormat}
	}
	return nil
}

// parseFile parses a whole safetensors file held in data (a mapping or any byte slice).
func parseFile(path string, data []byte) ([]TensorRef, error) {
	if len(data) < 8 {
		return nil, &FileError{File: path, Msg: fmt.Sprintf("file is %d bytes; a safetensors file starts with an 8-byte header length", len(data)), Err: ErrFormat}
	}
	n := binary.LittleEndian.Uint64(data)
	if err := checkLength(path, n, int64(len(data))); err != nil {
		return nil, err
	}
	return parseHeader(path, data, int(n))
}

// readableDTypes are the safetensors dtypes the header parser accepts: the float types anepack
// converts, and the integer and bool types of buffers and quantized checkpoints, which Check
// refuses only where the architecture needs the tensor.
var readableDTypes = map[string]bool{"BF16": true, "F16": true, "F32": true, "F64": true, "BOOL": true,
	"U8": true, "I8": true, "I16": true, "U16": true, "I32": true, "U32": true, "I64": true, "U64": true}

// headerEntry is one tensor entry of the JSON header, decoded loosely to report errors by name.
type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

func parseHeader(path string, data []byte, n int) ([]TensorRef, error) {
	header := data[8 : 8+n]
	names, err := headerKeys(header)
	if err != nil {
		return nil, &FileError{File: path, Msg: "header is not a JSON object: " + err.Error(), Err: ErrFormat}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, &FileError{File: path, Msg: "header is not a JSON object: " + err.Error(), Err: ErrFormat}
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			return nil, &FileError{File: path, Tensor: name, Msg: "appears twice in the header", Err: ErrFormat}
		}
		seen[name] = true
		if name == "__metadata__" {
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(raw[name], &e); err != nil {
			return nil, &FileError{File: path, Tensor: name, Msg: "header entry: " + err.Error(), Err: ErrFormat}
		}
		if !readableDTypes[e.DType] {
			return nil, &FileError{File: path, Tensor: name, Msg: fmt.Sprintf("dtype %q is not supported; expected BF16, F16 or F32 (or the integer and bool types of buffers and quantized checkpoints)", e.DType), Err: ErrFormat}
		}

	}
	st, err := safetensors.Deserialize(data)
	if err != nil {
		return nil, &FileError{File: path, Msg: err.Error(), Err: ErrFormat}
	}
	refs := make([]TensorRef, 0, st.Len())
	for _, nt := range st.Tensors() {
		tv := nt.TensorView
		shape := make([]int, len(tv.Shape()))
		for i, d := range tv.Shape() {
			shape[i] = int(d)
		}
		// A dtype outside the vocabulary (BOOL buffers, F64) is kept as Invalid: Check refuses it
		// only if the architecture needs the tensor.
		dt, _ := dtype.FromSafetensors(tv.DType().String())
		refs = append(refs, TensorRef{
			Name:     nt.Name,
			File:     path,
			DType:    dt,
			RawDType: tv.DType().String(),
			Shape:    shape,
			Data:     tv.Data(),
		})
	}
	return refs, nil
}

// headerKeys lists the top-level keys of a JSON object in order, duplicates included.
func headerKeys(header []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(header))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("expected '{'")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("expected a key")
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if rest := strings.TrimSpace(string(header[dec.InputOffset():])); rest != "" {
		return nil, fmt.Errorf("trailing data after the header object")
	}
	return keys, nil
}
