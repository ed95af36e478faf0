package format

import "encoding/json"

// Manifest is the JSON document stored in every bundle: what the model is, where each tensor's
// bytes are, which ANE programs exist, how to load the tokenizer, generation defaults, and where
// the model came from. It never holds a token or a local path.
//
// Readers ignore fields they do not know (a newer minor version may add some).
type Manifest struct {
	FormatVersion string      `json:"format_version"` // "MAJOR.MINOR" of the container
	Producer      string      `json:"producer"`       // e.g. "anepack 0.1.0"
	Model         Model       `json:"model"`
	Tensors       []Tensor    `json:"tensors"`
	Programs      []Program   `json:"programs,omitempty"` // "kernels" in minor versions 0 to 2
	ANE           *ANE        `json:"ane,omitempty"`
	Tokenizer     *Tokenizer  `json:"tokenizer,omitempty"`
	Generation    Generation  `json:"generation"`
	Provenance    Provenance  `json:"provenance"`
	Conversion    *Conversion `json:"conversion,omitempty"`
}

// Model describes the network.
type Model struct {
	Name         string `json:"name"`         // e.g. "Qwen2.5-0.5B-Instruct"
	Architecture string `json:"architecture"` // Hugging Face class, e.g. "Qwen2ForCausalLM"
	// Config is the validated architecture config (package arch's Config as JSON).
	Config json.RawMessage `json:"config"`
	// DType is the storage type of the linear weights: "f16", "f32", "q8" or "q4".
	DType string `json:"dtype"`
	// GroupSize is the q4 group size (inputs per scale and offset).
	GroupSize  int   `json:"group_size,omitempty"`
	Parameters int64 `json:"parameters"`
}

// Tensor is a view of one tensor's bytes inside the bundle, under its Hugging Face name.
// Most tensors have one part. A tensor split by rows (the LM head or tied embedding, kept in
// ANE-sized chunks of at most 65536 rows) has several parts, in row order.
type Tensor struct {
	Name  string       `json:"name"`
	DType string       `json:"dtype"` // "f16" or "f32"
	Shape []int        `json:"shape"` // row-major; [out, in] for linear weights
	Parts []TensorPart `json:"parts"`
	// Transposed says the checkpoint stored this weight [in, out] (GPT-2's Conv1D) and the
	// bundle holds its transpose, in Shape's [out, in] layout.
	Transposed bool `json:"transposed,omitempty"`
	// A quantized weight (DType "q8", "q4" or "mxfp4") keeps its codes in Parts and its scales
	// (and, for q4, offsets) in Scales and Offsets, one part per part of Parts, with the same
	// rows: q8 has an fp16 scale per row; q4 an fp16 scale and offset per row and group of
	// GroupSize inputs; mxfp4 an E8M0 byte per row and block of 32 inputs, and no offsets.
	Scales    []TensorPart `json:"scales,omitempty"`
	Offsets   []TensorPart `json:"offsets,omitempty"`
	GroupSize int          `json:"group_size,omitempty"`
}

// TensorPart is a run of whole rows stored contiguously in one section.
type TensorPart struct {
	Section string `json:"section"` // section name
	Offset  int64  `json:"offset"`  // byte offset inside the section (64-byte aligned)
	Rows    int    `json:"rows"`    // rows of the tensor's first dimension held here
	Size    int64  `json:"size"`    // bytes
}

// Program is one ANE program stored in the bundle: MIL text plus the weight blobs it names.
type Program struct {
	Name   string `json:"name"`            // unique, e.g. "layers.0.attn_qkv.s64"
	Kind   string `json:"kind"`            // "attn_qkv", "attn_o", "mlp", "lm_head"
	Layer  int    `json:"layer"`           // decoder layer, or -1
	Chunk  int    `json:"chunk,omitempty"` // LM head chunk index
	Seq    int    `json:"seq"`             // spatial size S of the [1,C,1,S] I/O (a multiple of 32)
	Decode bool   `json:"decode,omitempty"`
	// MIL is the section holding the program's text, at MILOffset for MILSize bytes (several
	// programs share one section).
	MIL       string `json:"mil"`
	MILOffset int64  `json:"mil_offset"`
	MILSize   int64  `json:"mil_size"`
	// Weights maps each BLOBFILE path named in the MIL text to the section holding that file.
	Weights []ProgramWeight `json:"weights,omitempty"`
	Inputs  []ProgramIO     `json:"inputs"`
	Outputs []ProgramIO     `json:"outputs"`
}

// DecodeSeq is the Seq of the programs that serve decode, the ones marked Decode: one live
// column padded to the ANE's 32-element fp16 row (docs/ane.md). A bundle that has programs has
// every layer group and LM-head chunk in this bucket.
const DecodeSeq = 32

// ANE records the options the bundle's ANE programs were generated with.
type ANE struct {
	// LMHeadRows is the most rows of one LM-head chunk: the LM head (or tied embedding) is
	// stored and run in chunks of this many rows, the last one shorter.
	LMHeadRows int `json:"lm_head_rows"`
	// Seqs are the sequence-length buckets of the layer programs.
	Seqs []int `json:"seqs"`
}

// ProgramWeight binds a MIL BLOBFILE path to a bundle section.
type ProgramWeight struct {
	Path    string `json:"path"`    // e.g. "@model_path/weights/attn_qkv.bin"
	Section string `json:"section"` // section holding the whole blob file
}

// ProgramIO is one input or output of a program.
type ProgramIO struct {
	Name  string `json:"name"`
	DType string `json:"dtype"` // "f16" (bundles of format 1.0 wrote "fp16")
	Shape []int  `json:"shape"` // [1, C, 1, S]
}

// Tokenizer says where the compiled tokenizer tables are and summarises them.
type Tokenizer struct {
	Section string `json:"section"` // section holding the compiled tables
	// Info is the tokenizer package's summary (vocabulary size, special ids, ...).
	Info json.RawMessage `json:"info,omitempty"`
}

// Generation holds defaults from generation_config.json (and config.json's token ids).
// Pointer fields are absent when the source did not set them.
type Generation struct {
	BOSTokenID        *int     `json:"bos_token_id,omitempty"`
	EOSTokenIDs       []int    `json:"eos_token_ids,omitempty"`
	PadTokenID        *int     `json:"pad_token_id,omitempty"`
	DoSample          *bool    `json:"do_sample,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	MaxNewTokens      *int     `json:"max_new_tokens,omitempty"`
}

// Provenance records where the weights came from.
type Provenance struct {
	Source   string       `json:"source"`             // "hf" or "local"
	Repo     string       `json:"repo,omitempty"`     // e.g. "Qwen/Qwen2.5-0.5B-Instruct"
	Revision string       `json:"revision,omitempty"` // as asked, e.g. "main"
	Commit   string       `json:"commit,omitempty"`   // what the revision resolved to
	Files    []SourceFile `json:"files"`
}

// SourceFile is one input file and its digest.
type SourceFile struct {
	Name   string `json:"name"` // relative to the checkpoint directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lowercase hex
}

// Conversion records what happened to the numbers while converting (BF16 -> FP16 can overflow).
type Conversion struct {
	SourceDType string `json:"source_dtype"` // e.g. "bf16"
	Overflows   int64  `json:"overflows"`    // values that became ±Inf
	Subnormals  int64  `json:"subnormals"`   // values that became FP16 subnormals (precision loss)
	Underflows  int64  `json:"underflows"`   // non-zero values that became ±0
}

// programsKeyMinor is the first minor version whose manifest lists the ANE programs under
// "programs". Minors 0 to 2 list them under "kernels"; the reader takes that key from those
// minors only, so that in a later bundle it is an unknown field like any other.
const programsKeyMinor = 3

// decodeManifest decodes the manifest JSON of a bundle of the given minor version.
func decodeManifest(data []byte, minor uint16) (*Manifest, error) {
	m := new(Manifest)
	doc := struct {
		*Manifest
		Kernels []Program `json:"kernels"`
	}{Manifest: m}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if minor < programsKeyMinor {
		m.Programs = doc.Kernels
	}
	return m, nil
}

// FindTensor returns the tensor called name, or nil.
func (m *Manifest) FindTensor(name string) *Tensor {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i]
		}
	}
	return nil
}
