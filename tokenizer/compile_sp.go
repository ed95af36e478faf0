package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Compiling SentencePiece-style BPE (Gemma): tokenizer.json's model is BPE over characters with
// byte_fallback, the normalizer replaces " " by "▁" (U+2581), and the decoder is
// Sequence[Replace "▁" -> " ", ByteFallback, Fuse].

// metaSpace is SentencePiece's visible space, U+2581 LOWER ONE EIGHTH BLOCK.
const metaSpace = "\u2581"

// stringPattern reads an HF pattern object {"String": s}; ok is false for {"Regex": ...}.
func stringPattern(raw json.RawMessage) (s string, ok bool) {
	var p struct {
		String *string `json:"String"`
	}
	if json.Unmarshal(raw, &p) != nil || p.String == nil {
		return "", false
	}
	return *p.String, true
}

// readReplaceNormalizer accepts the one Replace normalizer that is supported: " " -> "▁".
func (b *builder) readReplaceNormalizer(raw json.RawMessage, field string) error {
	var r struct {
		Pattern json.RawMessage `json:"pattern"`
		Content string          `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return tokErr(field, "%v", err)
	}
	if pat, ok := stringPattern(r.Pattern); !ok || pat != " " || r.Content != metaSpace {
		return tokErr(field, "Replace %s -> %q is not supported (only the String \" \" -> \"▁\")", r.Pattern, r.Content)
	}
	b.flags |= flagSpaceToMeta
	return nil
}

// readSpaceSplit accepts a Split on the String " " after the "▁" normalizer: no space survives
// normalization, so the Split never fires and every segment stays one word (preNone). The
// behaviour does not matter when nothing matches; invert does.
func (b *builder) readSpaceSplit(raw json.RawMessage) error {
	var split struct {
		Pattern  json.RawMessage `json:"pattern"`
		Behavior string          `json:"behavior"`
		Invert   bool            `json:"invert"`
	}
	if err := json.Unmarshal(raw, &split); err != nil {
		return tokErr("pre_tokenizer", "%v", err)
	}
	if pat, ok := stringPattern(split.Pattern); !ok || pat != " " || split.Invert {
		return tokErr("pre_tokenizer", "a Split on %s (invert=%v) is not supported on its own (only the String \" \" after the \"▁\" normalizer, or Sequence[Split(regex), ByteLevel])", split.Pattern, split.Invert)
	}
	if b.flags&flagSpaceToMeta == 0 {
		return tokErr("pre_tokenizer", "a Split on \" \" is only supported after the normalizer Replace \" \" -> \"▁\"")
	}
	b.pre = preNone
	return nil
}

// readSPDecoder accepts exactly Sequence[Replace "▁" -> " ", ByteFallback, Fuse].
func (b *builder) readSPDecoder(raw json.RawMessage) error {
	var seq struct {
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(raw, &seq); err != nil {
		return tokErr("decoder", "%v", err)
	}
	const want = `Sequence[Replace "▁" -> " ", ByteFallback, Fuse]`
	var types []string
	for i, d := range seq.Decoders {
		t, _, err := typeOf(d)
		if err != nil {
			return tokErr(fmt.Sprintf("decoder.decoders[%d]", i), "%v", err)
		}
		types = append(types, t)
	}
	if strings.Join(types, ",") != "Replace,ByteFallback,Fuse" {
		return tokErr("decoder.decoders", "[%s] is not supported (only %s)", strings.Join(types, ", "), want)
	}
	var r struct {
		Pattern json.RawMessage `json:"pattern"`
		Content string          `json:"content"`
	}
	if err := json.Unmarshal(seq.Decoders[0], &r); err != nil {
		return tokErr("decoder.decoders[0]", "%v", err)
	}
	if pat, ok := stringPattern(r.Pattern); !ok || pat != metaSpace || r.Content != " " {
		return tokErr("decoder.decoders[0]", "Replace %s -> %q is not supported (only %s)", r.Pattern, r.Content, want)
	}
	b.spDecoder = true
	return nil
}

// checkPipeline refuses mixtures of the byte-level and SentencePiece-style pieces, naming the
// field that does not fit the model.
func (b *builder) checkPipeline(byteFallback bool) error {
	if !byteFallback {
		switch {
		case b.spDecoder:
			return tokErr("model.byte_fallback", "false with the decoder Sequence[Replace, ByteFallback, Fuse] is not supported (characters outside the vocab would become <unk>)")
		case b.flags&flagSpaceToMeta != 0:
			return tokErr("normalizer", "Replace \" \" -> \"▁\" is only supported for a BPE model with byte_fallback")
		}
		return nil
	}
	switch {
	case !b.spDecoder:
		return tokErr("decoder", "byte_fallback BPE needs the decoder Sequence[Replace \"▁\" -> \" \", ByteFallback, Fuse]")
	case b.flags&flagSpaceToMeta == 0:
		return tokErr("normalizer", "byte_fallback BPE is only supported with the normalizer Replace \" \" -> \"▁\"")
	case b.pre != preNone:
		return tokErr("pre_tokenizer", "byte_fallback BPE is only supported with a Split on \" \" or no pre-tokenizer")
	case b.flags&flagNFC != 0:
		return tokErr("normalizer", "NFC together with Replace \" \" -> \"▁\" is not supported")
	}
	b.flags |= flagByteFallback
	return nil
}

// byteFallbackIDs finds the 256 tokens <0x00>..<0xFF> that HF's BPE spells with format!("<{:#04X}>"),
// so no character can ever become <unk>.
func (b *builder) byteFallbackIDs() error {
	for c := 0; c < 256; c++ {
		name := fmt.Sprintf("<0x%02X>", c)
		id, ok := b.vocab[name]
		if !ok {
			return tokErr("model.vocab", "byte_fallback is true but the byte token %s is missing; all 256 of <0x00>..<0xFF> are required", name)
		}
		b.byteIDs[c] = id
	}
	return nil
}

// fallbackByte reports whether HF's ByteFallback decoder reads tok as one byte: six bytes,
// "<0x", two characters that u8::from_str_radix(_, 16) accepts (a leading '+' included), ">".
func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	hex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	hi, ok1 := hex(tok[3])
	lo, ok2 := hex(tok[4])
	switch {
	case ok1 && ok2:
		return hi<<4 | lo, true
	case tok[3] == '+' && ok2:
		return lo, true
	}
	return 0, false
}

// spDecodeForm returns what one token decodes to through Replace "▁" -> " " and ByteFallback,
// and whether it is a byte token (which Fuse then joins with neighbouring byte tokens).
func spDecodeForm(tok string) ([]byte, bool) {
	s := strings.ReplaceAll(tok, metaSpace, " ")
	if c, ok := fallbackByte(s); ok {
		return []byte{c}, true
	}
	return []byte(s), false
}

// finishDecode fills the decode bytes of every id and flags the byte-fallback tokens. HF decodes
// an id through the decoder chain from its token string: the content of an added token (looked up
// first), else the model vocab's spelling.
func (b *builder) finishDecode() {
	b.decode = make([][]byte, len(b.tokens))
	for id := range b.tokens {
		if b.tokFlags[id]&tokPresent == 0 {
			continue
		}
		d, isByte := spDecodeForm(string(b.tokens[id]))
		b.decode[id] = d
		if isByte {
			b.tokFlags[id] |= tokByte
		}
	}
}
