package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Compile reads a Hugging Face tokenizer.json and (optionally, may be nil) its tokenizer_config.json
// and returns the compiled tables (format in tables.go), plus the Info that describes them. It
// refuses, with an error naming the file, field and value, every construct it does not implement
// exactly: model types other than BPE, normalizers other than NFC (or Gemma's " " -> "▁"),
// pre-tokenizers other than the Qwen2 / Qwen3.5 / Llama 3 / o200k Split regex or GPT-2 ByteLevel,
// decoders other than ByteLevel (or Gemma's Replace + ByteFallback + Fuse), and so on.
// The result is verified by loading it before it is returned.
func Compile(tokenizerJSON, tokenizerConfigJSON []byte) ([]byte, *Info, error) {
	return CompileWith(tokenizerJSON, tokenizerConfigJSON, CompileOptions{})
}

// CompileOptions adjust Compile for model files beyond tokenizer.json and tokenizer_config.json.
type CompileOptions struct {
	// ChatTemplate, when non-empty, is the model's default chat template taken from a separate
	// file (chat_template.jinja, which newer transformers versions write instead of the
	// tokenizer_config.json key). As when transformers loads such a repository, it takes
	// precedence over a "default" template in tokenizer_config.json.
	//
	// A tokenizer whose special tokens are the harmony control tokens (gpt-oss) and that has no
	// template from either file gets the built-in harmony template ([HarmonyChatTemplate]) as
	// its default; Info reports it as BuiltinChatTemplate "harmony".
	ChatTemplate string
}

// CompileWith is Compile with options.
func CompileWith(tokenizerJSON, tokenizerConfigJSON []byte, opts CompileOptions) ([]byte, *Info, error) {
	s, err := buildSpec(tokenizerJSON)
	if err != nil {
		return nil, nil, err
	}
	if err := s.readConfig(tokenizerConfigJSON); err != nil {
		return nil, nil, err
	}
	if opts.ChatTemplate != "" {
		if !utf8.ValidString(opts.ChatTemplate) {
			return nil, nil, errors.New("chat_template.jinja: not valid UTF-8")
		}
		kept := []namedText{{"default", opts.ChatTemplate}}
		for _, t := range s.templates {
			if t.name != "default" {
				kept = append(kept, t)
			}
		}
		s.templates = kept
	}
	if len(s.templates) == 0 && hasHarmonyTokens(s.added) {
		s.templates = []namedText{{"default", harmonyTemplate}}
	}
	blob, err := writeTables(&s.spec)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	t, err := Load(blob)
	if err == nil {
		err = t.t.deepCheck()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("compiled tables failed verification (a bug): %w", err)
	}
	info := t.Info()
	return blob, &info, nil
}

// LoadJSON is Compile followed by Load, for callers that have the JSON files at hand.
func LoadJSON(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	blob, _, err := Compile(tokenizerJSON, tokenizerConfigJSON)
	if err != nil {
		return nil, err
	}
	return Load(blob)
}

type fileError struct {
	file, field, msg string
}

// Error implements error: "file: field: message".
func (e *fileError) Error() string {
	if e.field == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.field + ": " + e.msg
}

func tokErr(field, format string, args ...any) error {
	return &fileError{"tokenizer.json", field, fmt.Sprintf(format, args...)}
}

func cfgErr(field, format string, args ...any) error {
	return &fileError{"tokenizer_config.json", field, fmt.Sprintf(format, args...)}
}

// builder carries the HF-side view (strings) while the spec (ids and bytes) is filled in.
type builder struct {
	spec
	vocab     map[string]uint32 // model vocab, byte-level strings
	addedByID map[uint32]*addedSpec
	addedMap  map[string]uint32 // content -> id, as HF's added_tokens_map
	specials  map[string]bool
	spDecoder bool // decoder is Sequence[Replace "▁" -> " ", ByteFallback, Fuse]
}

type typed struct {
	Type string `json:"type"`
}

func typeOf(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", true, err
	}
	return t.Type, true, nil
}

func buildSpec(data []byte) (*builder, error) {
	var top struct {
		Version       string          `json:"version"`
		AddedTokens   json.RawMessage `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, tokErr("", "not a JSON object: %v", err)
	}
	if top.Version != "" && top.Version != "1.0" {
		return nil, tokErr("version", "%q is not supported (HF tokenizers reads only \"1.0\")", top.Version)
	}
	b := &builder{addedByID: map[uint32]*addedSpec{}, addedMap: map[string]uint32{}, specials: map[string]bool{}}
	if err := b.readNormalizer(top.Normalizer); err != nil {
		return nil, err
	}
	if err := b.readPreTokenizer(top.PreTokenizer); err != nil {
		return nil, err
	}
	if err := b.readDecoder(top.Decoder); err != nil {
		return nil, err
	}
	if err := b.readModel(top.Model); err != nil {
		return nil, err
	}
	if err := b.readAdded(top.AddedTokens); err != nil {
		return nil, err
	}
	if err := b.readPostProcessor(top.PostProcessor); err != nil {
		return nil, err
	}
	b.finishTokens()
	return b, nil
}

func (b *builder) readNormalizer(raw json.RawMessage) error {
	typ, present, err := typeOf(raw)
	if err != nil {
		return tokErr("normalizer", "%v", err)
	}
	if !present {
		return nil
	}
	switch typ {
	case "NFC":
		b.flags |= flagNFC
		return nil
	case "Replace":
		return b.readReplaceNormalizer(raw, "normalizer")
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return tokErr("normalizer", "%v", err)
		}
		for i, n := range seq.Normalizers {
			t, _, err := typeOf(n)
			if err != nil {
				return tokErr(fmt.Sprintf("normalizer.normalizers[%d]", i), "%v", err)
			}
			switch t {
			case "NFC":
				b.flags |= flagNFC
			case "Replace":
				if err := b.readReplaceNormalizer(n, fmt.Sprintf("normalizer.normalizers[%d]", i)); err != nil {
					return err
				}
			default:
				return tokErr(fmt.Sprintf("normalizer.normalizers[%d].type", i), "%q is not supported (only NFC and Replace \" \" -> \"▁\")", t)
			}
		}
		return nil
	}
	return tokErr("normalizer.type", "%q is not supported (only NFC, Replace \" \" -> \"▁\", a Sequence of those, or null)", typ)
}

type byteLevelJSON struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

func (b *builder) readPreTokenizer(raw json.RawMessage) error {
	typ, present, err := typeOf(raw)
	if err != nil {
		return tokErr("pre_tokenizer", "%v", err)
	}
	if !present {
		if b.flags&flagSpaceToMeta != 0 {
			b.pre = preNone // SentencePiece-style: each normalized segment is one word
			return nil
		}
		return tokErr("pre_tokenizer", "missing; a byte-level pre-tokenizer is required")
	}
	switch typ {
	case "Split":
		return b.readSpaceSplit(raw)
	case "ByteLevel":
		var bl byteLevelJSON
		if err := json.Unmarshal(raw, &bl); err != nil {
			return tokErr("pre_tokenizer", "%v", err)
		}
		if bl.AddPrefixSpace {
			return tokErr("pre_tokenizer.add_prefix_space", "true is not supported")
		}
		if bl.UseRegex != nil && !*bl.UseRegex {
			return tokErr("pre_tokenizer.use_regex", "false without a Split before it is not supported")
		}
		b.pre = preGPT2
		return nil
	case "Sequence":
		var seq struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return tokErr("pre_tokenizer", "%v", err)
		}
		if len(seq.Pretokenizers) != 2 {
			return tokErr("pre_tokenizer.pretokenizers", "%d entries; only [Split, ByteLevel] is supported", len(seq.Pretokenizers))
		}
		var split struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(seq.Pretokenizers[0], &split); err != nil {
			return tokErr("pre_tokenizer.pretokenizers[0]", "%v", err)
		}
		if split.Type != "Split" {
			return tokErr("pre_tokenizer.pretokenizers[0].type", "%q is not supported (expected Split)", split.Type)
		}
		if split.Pattern.Regex == nil {
			return tokErr("pre_tokenizer.pretokenizers[0].pattern", "only a Regex pattern is supported")
		}
		switch *split.Pattern.Regex {
		case patternQwen2:
			b.pre = preQwen2
		case patternLlama3:
			b.pre = preLlama3
		case patternQwen35:
			b.pre = preQwen35
		case patternO200k:
			b.pre = preO200k
		default:
			return tokErr("pre_tokenizer.pretokenizers[0].pattern.Regex", "%q is not a supported pattern (Qwen2, Qwen3.5, Llama 3 or o200k)", *split.Pattern.Regex)
		}
		if split.Behavior != "Isolated" || split.Invert {
			return tokErr("pre_tokenizer.pretokenizers[0].behavior", "%q with invert=%v is not supported (only Isolated, invert=false)", split.Behavior, split.Invert)
		}
		var bl byteLevelJSON
		if err := json.Unmarshal(seq.Pretokenizers[1], &bl); err != nil {
			return tokErr("pre_tokenizer.pretokenizers[1]", "%v", err)
		}
		if bl.Type != "ByteLevel" {
			return tokErr("pre_tokenizer.pretokenizers[1].type", "%q is not supported (expected ByteLevel)", bl.Type)
		}
		if bl.AddPrefixSpace || bl.UseRegex == nil || *bl.UseRegex {
			return tokErr("pre_tokenizer.pretokenizers[1]", "ByteLevel after Split must have add_prefix_space=false and use_regex=false")
		}
		return nil
	}
	return tokErr("pre_tokenizer.type", "%q is not supported (only ByteLevel, Sequence[Split, ByteLevel], or Split on \" \" after the \"▁\" normalizer)", typ)
}

func (b *builder) readDecoder(raw json.RawMessage) error {
	typ, present, err := typeOf(raw)
	if err != nil {
		return tokErr("decoder", "%v", err)
	}
	if typ == "Sequence" {
		return b.readSPDecoder(raw)
	}
	if !present || typ != "ByteLevel" {
		if !present {
			typ = "null"
		}
		return tokErr("decoder.type", "%q is not supported (only ByteLevel, or Sequence[Replace, ByteFallback, Fuse])", typ)
	}
	return nil
}

func (b *builder) readModel(raw json.RawMessage) error {
	var m struct {
		Type                    string          `json:"type"`
		Dropout                 *float64        `json:"dropout"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		ByteFallback            bool            `json:"byte_fallback"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return tokErr("model", "missing")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return tokErr("model", "%v", err)
	}
	if m.Type == "" && m.Merges != nil {
		m.Type = "BPE"
	}
	if m.Type != "BPE" {
		return tokErr("model.type", "%q is not supported (only BPE)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return tokErr("model.dropout", "%v is not supported (BPE dropout is random)", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return tokErr("model.continuing_subword_prefix", "%q is not supported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return tokErr("model.end_of_word_suffix", "%q is not supported", *m.EndOfWordSuffix)
	}
	if m.IgnoreMerges {
		b.flags |= flagIgnoreMerges
	}
	if err := b.checkPipeline(m.ByteFallback); err != nil {
		return err
	}
	if err := b.readVocab(m.Vocab); err != nil {
		return err
	}
	if b.flags&flagByteFallback != 0 {
		if err := b.byteFallbackIDs(); err != nil {
			return err
		}
		return b.readMerges(m.Merges)
	}
	// Every byte must have its own symbol, so no character is ever dropped or mapped to unk.
	for c := 0; c < 256; c++ {
		id, ok := b.vocab[string(byteToRune[c])]
		if !ok {
			return tokErr("model.vocab", "lacks the byte-level symbol %q for byte %#02x; only complete byte-level vocabularies are supported", string(byteToRune[c]), c)
		}
		b.byteIDs[c] = id
	}
	return b.readMerges(m.Merges)
}

func (b *builder) readVocab(raw json.RawMessage) error {
	if len(raw) == 0 {
		return tokErr("model.vocab", "missing")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return tokErr("model.vocab", "not a JSON object")
	}
	b.vocab = map[string]uint32{}
	seenID := map[uint32]string{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return tokErr("model.vocab", "%v", err)
		}
		key := kt.(string)
		vt, err := dec.Token()
		if err != nil {
			return tokErr("model.vocab", "%v", err)
		}
		num, ok := vt.(json.Number)
		if !ok {
			return tokErr("model.vocab", "value of %q is %v, expected an id", key, vt)
		}
		id, err := num.Int64()
		if err != nil || id < 0 || id >= 1<<30 {
			return tokErr("model.vocab", "id %v of %q out of range", num, key)
		}
		if _, dup := b.vocab[key]; dup {
			return tokErr("model.vocab", "token %q listed twice", key)
		}
		if other, dup := seenID[uint32(id)]; dup {
			return tokErr("model.vocab", "id %d used by both %q and %q", id, other, key)
		}
		b.vocab[key] = uint32(id)
		seenID[uint32(id)] = key
	}
	b.modelVocab = uint32(len(b.vocab))
	// Ids in [0, max] get bytes; finishTokens fills them in once added tokens are known.
	maxID := uint32(0)
	for _, id := range b.vocab {
		maxID = max(maxID, id)
	}
	if int(maxID) >= 2*len(b.vocab)+1024 {
		return tokErr("model.vocab", "ids are too sparse: %d entries, largest id %d", len(b.vocab), maxID)
	}
	b.tokens = make([][]byte, maxID+1)
	b.tokFlags = make([]uint8, maxID+1)
	sp := b.flags&flagByteFallback != 0
	for key, id := range b.vocab {
		f := uint8(tokPresent | tokModel)
		bs, ok := byteLevelDecode(key)
		if sp || !ok { // SentencePiece-style tokens are keyed by their spelling
			bs = []byte(key)
			f |= tokRaw
		}
		b.tokens[id] = bs
		b.tokFlags[id] = f
	}
	return nil
}

func (b *builder) readMerges(raw json.RawMessage) error {
	if len(raw) == 0 {
		return tokErr("model.merges", "missing")
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		var legacy []string
		if err2 := json.Unmarshal(raw, &legacy); err2 != nil {
			return tokErr("model.merges", "neither [[a, b], ...] nor [\"a b\", ...]: %v", err)
		}
		// The failed attempt may have filled pairs partially (encoding/json keeps going after a
		// type mismatch), so start over.
		pairs = pairs[:0]
		for _, l := range legacy {
			if strings.HasPrefix(l, "#version") {
				continue
			}
			parts := strings.Split(l, " ")
			if len(parts) != 2 {
				return tokErr("model.merges", "entry %d %q is not two space-separated tokens", len(pairs), l)
			}
			pairs = append(pairs, [2]string{parts[0], parts[1]})
		}
	}
	b.mergesListed = uint32(len(pairs))
	index := map[uint64]int{}
	for rank, p := range pairs {
		l, ok1 := b.vocab[p[0]]
		r, ok2 := b.vocab[p[1]]
		res, ok3 := b.vocab[p[0]+p[1]]
		switch {
		case !ok1:
			return tokErr(fmt.Sprintf("model.merges[%d]", rank), "%q is not in the vocab", p[0])
		case !ok2:
			return tokErr(fmt.Sprintf("model.merges[%d]", rank), "%q is not in the vocab", p[1])
		case !ok3:
			return tokErr(fmt.Sprintf("model.merges[%d]", rank), "merged token %q is not in the vocab", p[0]+p[1])
		}
		// A merge involving a token outside the byte-level alphabet can never fire, because
		// words are made of byte symbols and every merge result stays byte-level.
		// (SentencePiece-style words are made of characters, so there every merge can fire.)
		raw := b.tokFlags[l]&tokRaw != 0 || b.tokFlags[r]&tokRaw != 0 || b.tokFlags[res]&tokRaw != 0
		if raw && b.flags&flagByteFallback == 0 {
			continue
		}
		key := uint64(l)<<32 | uint64(r)
		m := mergeSpec{l, r, uint32(rank), res}
		if i, dup := index[key]; dup {
			b.merges[i] = m // HF builds a HashMap from the list: the last rank wins.
			continue
		}
		index[key] = len(b.merges)
		b.merges = append(b.merges, m)
	}
	return nil
}

type addedTokenJSON struct {
	ID         *uint32 `json:"id"`
	Content    string  `json:"content"`
	SingleWord bool    `json:"single_word"`
	Lstrip     bool    `json:"lstrip"`
	Rstrip     bool    `json:"rstrip"`
	Normalized *bool   `json:"normalized"`
	Special    bool    `json:"special"`
}

// readAdded replays HF AddedVocabulary::add_tokens over the list in file order, including its id
// assignment (a token already in the vocab keeps that id; others get ids from the model vocab
// size upward) and the NFC form used to match and decode tokens with normalized=true.
func (b *builder) readAdded(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var list []addedTokenJSON
	if err := json.Unmarshal(raw, &list); err != nil {
		return tokErr("added_tokens", "%v", err)
	}
	next := b.modelVocab
	for i, a := range list {
		if a.Content == "" {
			continue
		}
		normalized := !a.Special // HF's default when the field is absent
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		var flags uint32
		if a.Special {
			flags |= addSpecial
		}
		if a.Lstrip {
			flags |= addLstrip
		}
		if a.Rstrip {
			flags |= addRstrip
		}
		if a.SingleWord {
			flags |= addSingleWord
		}
		if normalized {
			flags |= addNormalized
		}
		if !utf8Valid(a.Content) {
			return tokErr(fmt.Sprintf("added_tokens[%d].content", i), "not valid UTF-8")
		}
		if id, ok := b.addedMap[a.Content]; ok {
			if old := b.addedByID[id]; old != nil && old.content == a.Content && old.flags == flags {
				continue
			}
		}
		id, ok := b.addedMap[a.Content]
		if !ok {
			id, ok = b.vocab[a.Content]
		}
		if !ok {
			id = next
			next++
		}
		if int(id) >= 2*len(b.vocab)+len(list)+1024 {
			return tokErr(fmt.Sprintf("added_tokens[%d]", i), "id %d out of range", id)
		}
		form := a.Content
		if normalized {
			form = b.normalizeText(a.Content)
		}
		b.addedMap[a.Content] = id
		if a.Special {
			b.specials[a.Content] = true
		}
		b.addedByID[id] = &addedSpec{id: id, flags: flags, content: a.Content, normalized: form}
	}
	return nil
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// normalizeText applies the normalizer, as HF does to the content of normalized added tokens.
func (b *builder) normalizeText(s string) string {
	if b.flags&flagNFC != 0 {
		s = norm.NFC.String(s)
	}
	if b.flags&flagSpaceToMeta != 0 {
		s = strings.ReplaceAll(s, " ", metaSpace)
	}
	return s
}

func (b *builder) readPostProcessor(raw json.RawMessage) error {
	typ, present, err := typeOf(raw)
	if err != nil {
		return tokErr("post_processor", "%v", err)
	}
	if !present {
		b.post = postNone
		return nil
	}
	parts := []json.RawMessage{raw}
	field := "post_processor"
	if typ == "Sequence" {
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return tokErr(field, "%v", err)
		}
		parts = seq.Processors
		field = "post_processor.processors"
	}
	b.post = postByteLvl
	for i, p := range parts {
		t, _, err := typeOf(p)
		if err != nil {
			return tokErr(field, "%v", err)
		}
		switch t {
		case "ByteLevel":
		case "TemplateProcessing":
			if err := b.readTemplateProcessing(p); err != nil {
				return err
			}
		default:
			return tokErr(fmt.Sprintf("%s[%d].type", field, i), "%q is not supported (only ByteLevel and TemplateProcessing)", t)
		}
	}
	return nil
}

func (b *builder) readTemplateProcessing(raw json.RawMessage) error {
	var tp struct {
		Single []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []uint32 `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &tp); err != nil {
		return tokErr("post_processor", "TemplateProcessing: %v", err)
	}
	seen := false
	for _, piece := range tp.Single {
		switch {
		case piece.Sequence != nil:
			if seen || piece.Sequence.ID != "A" {
				return tokErr("post_processor.single", "only one $A sequence is supported")
			}
			seen = true
		case piece.SpecialToken != nil:
			st, ok := tp.SpecialTokens[piece.SpecialToken.ID]
			if !ok {
				return tokErr("post_processor.special_tokens", "%q is used but not defined", piece.SpecialToken.ID)
			}
			if seen {
				b.suffix = append(b.suffix, st.IDs...)
			} else {
				b.prefix = append(b.prefix, st.IDs...)
			}
		default:
			return tokErr("post_processor.single", "entry is neither SpecialToken nor Sequence")
		}
	}
	if !seen {
		return tokErr("post_processor.single", "has no $A sequence")
	}
	b.post = postTemplate
	return nil
}

// finishTokens extends the id space to the added tokens and fills in their decode bytes and
// flags: HF decodes an added token from its (normalized) content through the ByteLevel decoder,
// which maps characters of the byte alphabet to bytes and keeps any other token verbatim.
func (b *builder) finishTokens() {
	for id := range b.addedByID {
		for int(id) >= len(b.tokens) {
			b.tokens = append(b.tokens, nil)
			b.tokFlags = append(b.tokFlags, 0)
		}
	}
	ids := make([]uint32, 0, len(b.addedByID))
	for id := range b.addedByID {
		ids = append(ids, id)
	}
	sortU32(ids)
	sp := b.flags&flagByteFallback != 0
	for _, id := range ids {
		a := b.addedByID[id]
		bs, ok := byteLevelDecode(a.normalized)
		if !ok {
			bs = []byte(a.normalized)
		}
		b.tokFlags[id] = b.tokFlags[id]&tokModel | tokPresent | tokAdded
		if sp {
			// Keyed by the spelling, like model tokens (the normalized form only matters for
			// matching); finishDecode derives what it decodes to.
			bs = []byte(a.content)
			b.tokFlags[id] |= tokRaw
		}
		b.tokens[id] = bs
		b.added = append(b.added, *a)
	}
	if sp {
		b.finishDecode()
	}
	// HF's decode(skip_special_tokens=True) drops an id when its token string is in the special set.
	for key, id := range b.vocab {
		if b.specials[key] {
			b.tokFlags[id] |= tokSpecial
		}
	}
	for _, id := range ids {
		if b.specials[b.addedByID[id].normalized] {
			b.tokFlags[id] |= tokSpecial
		}
	}
	// Model tokens whose id an added token took are decoded as the added token (HF looks up the
	// added vocabulary first); they stay in the vocab hash so encoding still finds them.
}

func sortU32(a []uint32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
