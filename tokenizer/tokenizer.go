package tokenizer

import (
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes and decodes text for one model. It is built by [Load] from compiled tables
// and keeps referring to those bytes (a memory-mapped bundle section can be passed directly):
// they must stay readable and unmodified while the Tokenizer is in use. A Tokenizer is safe for
// concurrent use.
type Tokenizer struct {
	t        *tables
	raw      *matcher  // added tokens with normalized=false, matched in the raw text
	norm     *matcher  // added tokens with normalized=true, matched after normalization
	pool     sync.Pool // *encoder
	addedIDs map[string]int
	addedAt  map[int]int // id -> index into t.added
	chat     chatCache

	// SentencePiece-style tables only: the initial symbols of each ASCII character (its vocab id,
	// or noID to use its byte-fallback token) and of a space, which the normalizer makes "▁".
	asciiIDs [utf8.RuneSelf]uint32
	metaSyms []uint32
}

// Load builds a Tokenizer from tables produced by [Compile]. It parses no JSON and copies none of
// the large tables; it validates the checksum and every count, offset and id, returning a
// *CorruptTablesError (never panicking) when something does not fit.
func Load(tables []byte) (*Tokenizer, error) {
	return load(tables, true)
}

func load(b []byte, checkCRC bool) (*Tokenizer, error) {
	t, err := parseTables(b, checkCRC)
	if err != nil {
		return nil, err
	}
	tk := &Tokenizer{t: t, addedIDs: make(map[string]int, len(t.added)), addedAt: make(map[int]int, len(t.added))}
	var raw, nrm []*addedSpec
	for i := range t.added {
		a := &t.added[i]
		tk.addedIDs[a.content] = int(a.id)
		tk.addedAt[int(a.id)] = i
		if a.flags&addNormalized != 0 {
			nrm = append(nrm, a)
		} else {
			raw = append(raw, a)
		}
	}
	tk.raw = newMatcher(raw, false)
	tk.norm = newMatcher(nrm, true)
	if t.flags&flagByteFallback != 0 {
		for c := range tk.asciiIDs {
			tk.asciiIDs[c] = noID
			if id, ok := lookupVocab(t, string(rune(c)), true); ok {
				tk.asciiIDs[c] = id
			}
		}
		tk.metaSyms = tk.appendCharSyms(nil, metaSpace)
	}
	tk.pool.New = func() any { return newEncoder(tk) }
	return tk, nil
}

// VocabSize returns the number of ids (model vocabulary plus added tokens): every id is below it.
func (tk *Tokenizer) VocabSize() int { return tk.t.vocab }

// BOS returns the beginning-of-sequence id from tokenizer_config.json, or -1 when there is none.
func (tk *Tokenizer) BOS() int { return tk.t.bos }

// EOS returns the end-of-sequence id from tokenizer_config.json (eos_token), or -1. Models often
// stop on more ids (generation_config.json's eos_token_id); see [Tokenizer.EOSIDs].
func (tk *Tokenizer) EOS() int { return tk.t.eos }

// PAD returns the padding id from tokenizer_config.json, or -1.
func (tk *Tokenizer) PAD() int { return tk.t.pad }

// EOSIDs returns the ids that end generation according to tokenizer_config.json: eos_token, if
// set. Callers that have generation_config.json should add its eos_token_id list.
func (tk *Tokenizer) EOSIDs() []int {
	if tk.t.eos < 0 {
		return nil
	}
	return []int{tk.t.eos}
}

// TokenBytes returns the bytes id decodes to on its own (nil for an unknown id): for a
// SentencePiece-style token "▁" becomes a space and a byte-fallback token <0xNN> its byte. The
// slice aliases the tables and must not be modified.
func (tk *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= tk.t.vocab || tk.t.tokFlags[id]&tokPresent == 0 {
		return nil
	}
	return tk.t.decodeBytes(id)
}

// Token returns the token's text as tokenizer.json spells it: the content of an added token, or
// the byte-level form of a vocab entry ("Ġhello" for " hello"). ok is false for unknown ids.
func (tk *Tokenizer) Token(id int) (tok string, ok bool) {
	if id < 0 || id >= tk.t.vocab {
		return "", false
	}
	f := tk.t.tokFlags[id]
	switch {
	case f&tokPresent == 0:
		return "", false
	case f&tokAdded != 0:
		i, ok := tk.addedAt[id]
		if !ok {
			return "", false
		}
		return tk.t.added[i].content, true
	case f&tokRaw != 0:
		return string(tk.t.tokenBytes(id)), true
	}
	return byteLevelEncode(tk.t.tokenBytes(id)), true
}

// TokenID returns the id of a token spelled as in tokenizer.json (an added token's content, or a
// vocab entry in byte-level form), like HF's token_to_id.
func (tk *Tokenizer) TokenID(tok string) (int, bool) {
	if id, ok := tk.addedIDs[tok]; ok {
		return id, true
	}
	if bs, ok := byteLevelDecode(tok); ok {
		if id, ok := lookupVocab(tk.t, bs, false); ok {
			return int(id), true
		}
	}
	if utf8.ValidString(tok) {
		if id, ok := lookupVocab(tk.t, tok, true); ok {
			return int(id), true
		}
	}
	return 0, false
}

// IsSpecial reports whether id is a special token (skipped by decoding with SkipSpecialTokens).
func (tk *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < tk.t.vocab && tk.t.tokFlags[id]&tokSpecial != 0
}

// lookupVocab finds a model-vocab id by its key bytes; raw selects entries outside the byte
// alphabet (every entry of SentencePiece-style tables is raw: keyed by its spelling).
func lookupVocab[T string | []byte](t *tables, key T, raw bool) (uint32, bool) {
	h := (fnv64(key) * hashMul) >> (64 - t.vocabBits)
	for {
		v := t.vocabHash[h]
		if v == 0 {
			return 0, false
		}
		id := v - 1
		if sameBytes(t.tokenBytes(int(id)), key) && (t.tokFlags[id]&tokRaw != 0) == raw {
			return id, true
		}
		h = (h + 1) & t.vocabMask
	}
}

// sameBytes compares without converting (a generic string(key) may allocate for a []byte).
func sameBytes[T string | []byte](a []byte, b T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TokenRef names one token in [Info].
type TokenRef struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// Info describes compiled tables; it is what the bundle's JSON manifest records.
type Info struct {
	Format         string `json:"format"`           // "anetok"
	FormatVersion  int    `json:"format_version"`   // layout version of the tables
	ModelType      string `json:"model_type"`       // "BPE"
	VocabSize      int    `json:"vocab_size"`       // ids are 0..vocab_size-1
	ModelVocabSize int    `json:"model_vocab_size"` // entries of model.vocab
	Merges         int    `json:"merges"`           // entries of model.merges
	AddedTokens    int    `json:"added_tokens"`
	SpecialTokens  int    `json:"special_tokens"`
	Normalizer     string `json:"normalizer"`     // "NFC", "Replace" (" " -> "▁") or "none"
	PreTokenizer   string `json:"pre_tokenizer"`  // "qwen2", "qwen3.5", "llama3", "gpt2", "o200k" or "none"
	PostProcessor  string `json:"post_processor"` // "none", "ByteLevel" or "TemplateProcessing"
	Decoder        string `json:"decoder"`        // "ByteLevel" or "Replace+ByteFallback+Fuse"
	IgnoreMerges   bool   `json:"ignore_merges"`
	// ByteFallback is true for SentencePiece-style BPE (Gemma): symbols are characters and a
	// character outside the vocab becomes its <0xNN> byte tokens.
	ByteFallback    bool      `json:"byte_fallback,omitempty"`
	BOS             *TokenRef `json:"bos,omitempty"`
	EOS             *TokenRef `json:"eos,omitempty"`
	PAD             *TokenRef `json:"pad,omitempty"`
	UNK             *TokenRef `json:"unk,omitempty"`
	HasChatTemplate bool      `json:"has_chat_template"`
	// BuiltinChatTemplate names the template anepack supplied because the checkpoint had none
	// ("harmony" for a gpt-oss tokenizer); empty when the template is the checkpoint's.
	BuiltinChatTemplate string   `json:"builtin_chat_template,omitempty"`
	ChatTemplates       []string `json:"chat_templates,omitempty"` // template names ("default", "tool_use", ...)
	// ChatTemplateErrors maps the name of each template this renderer cannot parse to the
	// reason (encoding still works; ApplyChatTemplate with that template fails).
	ChatTemplateErrors map[string]string `json:"chat_template_errors,omitempty"`
	TablesBytes        int               `json:"tables_bytes"`
	TablesCRC32C       uint32            `json:"tables_crc32c"`
}

// Info describes the tables the Tokenizer was loaded from.
func (tk *Tokenizer) Info() Info {
	t := tk.t
	in := Info{
		Format:         "anetok",
		FormatVersion:  int(u32(t.blob, 8)),
		ModelType:      "BPE",
		VocabSize:      t.vocab,
		ModelVocabSize: t.modelVocab,
		Merges:         t.mergesListed,
		AddedTokens:    len(t.added),
		Normalizer:     "none",
		PreTokenizer:   preKind(t.pre).String(),
		PostProcessor:  [...]string{"none", "ByteLevel", "TemplateProcessing"}[t.post],
		Decoder:        "ByteLevel",
		IgnoreMerges:   t.flags&flagIgnoreMerges != 0,
		TablesBytes:    int(len(t.blob)),
		TablesCRC32C:   u32(t.blob, 16),
	}
	if t.flags&flagNFC != 0 {
		in.Normalizer = "NFC"
	}
	if t.flags&flagSpaceToMeta != 0 {
		in.Normalizer = "Replace"
	}
	if t.flags&flagByteFallback != 0 {
		in.ByteFallback = true
		in.Decoder = "Replace+ByteFallback+Fuse"
	}
	for _, a := range t.added {
		if a.flags&addSpecial != 0 {
			in.SpecialTokens++
		}
	}
	ref := func(id int, name string) *TokenRef {
		if id < 0 {
			return nil
		}
		for _, v := range t.vars {
			if v.name == name {
				return &TokenRef{ID: id, Text: v.value}
			}
		}
		s, _ := tk.Token(id)
		return &TokenRef{ID: id, Text: s}
	}
	in.BOS, in.EOS = ref(t.bos, "bos_token"), ref(t.eos, "eos_token")
	in.PAD, in.UNK = ref(t.pad, "pad_token"), ref(t.unk, "unk_token")
	for _, tm := range t.templates {
		in.ChatTemplates = append(in.ChatTemplates, tm.name)
		if _, err := tk.parsedTemplate(tm.name, tm.text); err != nil {
			if in.ChatTemplateErrors == nil {
				in.ChatTemplateErrors = map[string]string{}
			}
			in.ChatTemplateErrors[tm.name] = err.Error()
		}
	}
	in.HasChatTemplate = len(t.templates) > 0
	if len(t.templates) == 1 && t.templates[0].text == harmonyTemplate {
		in.BuiltinChatTemplate = "harmony"
	}
	return in
}
