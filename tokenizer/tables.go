package tokenizer

// Compiled tokenizer tables ("anetok" format, versions 1 and 2).
//
// One blob, all integers little-endian, offsets counted from the start of the blob, every
// section starting on an 8-byte boundary. Readers map the blob and use the sections in place.
//
//	Header (72 bytes)
//	  0  [8]byte  magic "ANETOK\x00\x01"
//	  8  u32      format version: 1, or 2 when the tables use a version-2 feature (flags 4 and 8,
//	              pre-tokenizer kinds 4 to 6, sections 12 and 13); writers use the lowest that fits
//	 12  u32      total blob length in bytes
//	 16  u32      CRC-32C (Castagnoli) of the whole blob, computed with these 4 bytes as zero
//	 20  u32      flags: bit 0 NFC normalizer, bit 1 BPE ignore_merges, bit 2 SentencePiece-style
//	              BPE (symbols are characters, byte_fallback <0xNN> tokens, decoder Replace "▁" by
//	              " " + ByteFallback + Fuse; token bytes are the tokenizer.json spelling and
//	              sections 12-13 hold what ids decode to), bit 3 normalizer Replace " " by "▁"
//	 24  u32      pre-tokenizer kind: 1 qwen2, 2 llama3, 3 gpt2, 4 qwen3.5, 5 none, 6 o200k
//	              (see pretokenize.go)
//	 28  u32      post-processor kind: 0 none, 1 ByteLevel, 2 TemplateProcessing
//	 32  u32      vocab size V: ids are 0..V-1 (model vocab plus added tokens; holes allowed)
//	 36  u32      model vocab entries (HF get_vocab_size of the model)
//	 40  u32      merges listed in tokenizer.json
//	 44  u32      added tokens
//	 48  u32×4    bos, eos, pad, unk ids from tokenizer_config.json (0xFFFFFFFF = none)
//	 64  u32      section count S
//	 68  u32      reserved (0)
//	 72  S × {u32 id, u32 offset, u32 length, u32 reserved}
//
//	Sections (each id at most once; all but templates and template vars required):
//	  1 token bytes    byte-level tables: the bytes each id decodes to (HF ByteLevel decoder rule);
//	                   SentencePiece-style: the token's spelling; concatenated. The vocab hash and
//	                   the merges are keyed by these bytes.
//	  2 token offsets  u32 × (V+1); id i is bytes[off[i]:off[i+1]], non-decreasing
//	  3 token flags    u8 × V: 1 present, 2 raw (string form is the bytes, not byte-level),
//	                   4 added token, 8 special, 16 in the model vocab, 32 byte-fallback token
//	                   (decodes to one byte that HF's ByteFallback decoder joins with its neighbours)
//	  4 merges         u32 capacity C (power of two), u32 used U (< C), then C × 16 bytes
//	                   {u32 left, u32 right, u32 rank, u32 result}; empty slot: left = 0xFFFFFFFF.
//	                   Slot = (left<<32|right) × 0x9E3779B97F4A7C15 >> (64-log2 C), linear probing.
//	  5 vocab hash     u32 capacity C (power of two), u32 used U (< C), then C × u32 (id+1, 0 empty)
//	                   over model-vocab ids; slot = FNV-1a-64(token bytes) × 0x9E3779B97F4A7C15 >> (64-log2 C)
//	  6 byte ids       256 × u32: the id of each single byte
//	  7 added tokens   A × {u32 id, u32 flags, u32 content off, u32 content len, u32 normalized off,
//	                   u32 normalized len} (offsets into section 8); flags: 1 special, 2 lstrip,
//	                   4 rstrip, 8 single_word, 16 normalized
//	  8 strings        UTF-8 text referenced by sections 7, 9 and 10
//	  9 templates      u32 count, then count × {u32 name off, u32 name len, u32 text off, u32 text len}
//	 10 template vars  u32 count, then count × {u32 name off, u32 name len, u32 value off,
//	                   u32 value len, u32 kind}; kind 0 string, 1 element of a list (consecutive
//	                   entries with the same name form the list)
//	 11 post-processor u32 prefix count P, u32 suffix count Q, then (P+Q) × u32 ids
//	 12 decode offsets SentencePiece-style only: u32 × (V+1), as section 2, into section 13
//	 13 decode bytes   SentencePiece-style only: what each id decodes to (for a byte-fallback
//	                   token, its one byte)
//
// Version 1 readers reject other versions and unknown section ids. Byte-level tables are written
// as version 1, so bundles packed before version 2 existed load unchanged.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

var tablesMagic = [8]byte{'A', 'N', 'E', 'T', 'O', 'K', 0, 1}

const (
	tablesVersion   = 2 // the highest version this reader supports
	headerSize      = 72
	sectionEntrySz  = 16
	noID            = 0xFFFFFFFF
	mergeEntrySize  = 16
	addedEntrySize  = 24
	tmplEntrySize   = 16
	varEntrySize    = 20
	hashMul         = 0x9E3779B97F4A7C15
	maxSectionCount = 64
)

const (
	flagNFC          = 1
	flagIgnoreMerges = 2
	flagByteFallback = 4 // SentencePiece-style BPE (version 2)
	flagSpaceToMeta  = 8 // normalizer Replace " " by "▁" (version 2)
	flagsV1          = flagNFC | flagIgnoreMerges
	flagsV2          = flagsV1 | flagByteFallback | flagSpaceToMeta
)

const (
	postNone     = 0
	postByteLvl  = 1
	postTemplate = 2
)

const (
	secTokenBytes = 1 + iota
	secTokenOffsets
	secTokenFlags
	secMerges
	secVocabHash
	secByteIDs
	secAdded
	secStrings
	secTemplates
	secTemplateVars
	secPost
	secDecodeOffsets
	secDecodeBytes
	secCount = secDecodeBytes
)

// Token flags (section 3).
const (
	tokPresent = 1
	tokRaw     = 2
	tokAdded   = 4
	tokSpecial = 8
	tokModel   = 16
	tokByte    = 32
	tokAll     = tokPresent | tokRaw | tokAdded | tokSpecial | tokModel | tokByte
)

// Added-token flags (section 7).
const (
	addSpecial    = 1
	addLstrip     = 2
	addRstrip     = 4
	addSingleWord = 8
	addNormalized = 16
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// tablesCRC computes the blob checksum with the CRC field read as zero.
func tablesCRC(b []byte) uint32 {
	c := crc32.Update(0, crcTable, b[:16])
	c = crc32.Update(c, crcTable, []byte{0, 0, 0, 0})
	return crc32.Update(c, crcTable, b[20:])
}

// CorruptTablesError reports compiled tables that fail validation.
type CorruptTablesError struct {
	Reason string
}

// Error implements error.
func (e *CorruptTablesError) Error() string {
	return "tokenizer tables: " + e.Reason
}

func corrupt(format string, args ...any) error {
	return &CorruptTablesError{Reason: fmt.Sprintf(format, args...)}
}

// tables holds validated views into a blob; nothing is copied.
type tables struct {
	blob             []byte
	flags, pre, post uint32
	vocab            int
	modelVocab       int
	mergesListed     int
	addedCount       int
	bos, eos         int
	pad, unk         int

	tokBytes  []byte
	tokOffs   []uint32 // vocab+1 entries
	tokFlags  []byte
	decBytes  []byte   // SentencePiece-style: what each id decodes to
	decOffs   []uint32 // vocab+1 entries (nil for byte-level tables)
	merges    []uint32 // C × {left, right, rank, result}
	mergeMask uint64
	mergeBits uint
	vocabHash []uint32 // C entries
	vocabMask uint64
	vocabBits uint
	byteIDs   [256]uint32
	added     []addedSpec
	prefix    []uint32
	suffix    []uint32
	templates []namedText
	vars      []templateVar
}

func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// u32view returns b as little-endian uint32s: in place when the host is little-endian and b is
// 4-byte aligned (always, for sections of an aligned blob), otherwise as a converted copy.
func u32view(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	if nativeLittleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// parseTables validates b and returns views into it. It never panics on malformed input: every
// count and offset is checked before use, with the CRC first so random damage is reported as such.
func parseTables(b []byte, checkCRC bool) (*tables, error) {
	if len(b) < headerSize {
		return nil, corrupt("blob is %d bytes, shorter than the %d-byte header", len(b), headerSize)
	}
	if [8]byte(b[0:8]) != tablesMagic {
		return nil, corrupt("bad magic %q, expected %q", b[0:8], tablesMagic[:])
	}
	version := u32(b, 8)
	if version < 1 || version > tablesVersion {
		return nil, corrupt("format version %d, this reader supports 1 to %d", version, tablesVersion)
	}
	if n := u32(b, 12); uint64(n) != uint64(len(b)) {
		return nil, corrupt("header says %d bytes, blob has %d (truncated or padded)", n, len(b))
	}
	if checkCRC {
		if got, want := tablesCRC(b), u32(b, 16); got != want {
			return nil, corrupt("CRC-32C mismatch: header %08x, content %08x", want, got)
		}
	}
	t := &tables{
		blob:         b,
		flags:        u32(b, 20),
		pre:          u32(b, 24),
		post:         u32(b, 28),
		vocab:        int(u32(b, 32)),
		modelVocab:   int(u32(b, 36)),
		mergesListed: int(u32(b, 40)),
		addedCount:   int(u32(b, 44)),
	}
	if t.flags&^uint32(flagsV2) != 0 || (version == 1 && t.flags&^uint32(flagsV1) != 0) {
		return nil, corrupt("unknown header flags %#x for format version %d", t.flags, version)
	}
	switch preKind(t.pre) {
	case preQwen2, preLlama3, preGPT2:
	case preQwen35, preNone, preO200k:
		if version == 1 {
			return nil, corrupt("pre-tokenizer kind %d needs format version 2", t.pre)
		}
	default:
		return nil, corrupt("unknown pre-tokenizer kind %d", t.pre)
	}
	// The SentencePiece-style pieces only make sense together: characters as symbols need the
	// decode sections, and the "none" pre-tokenizer is only exact after the "▁" normalizer.
	sp := t.flags&flagByteFallback != 0
	if (t.flags&flagSpaceToMeta != 0) != sp || (preKind(t.pre) == preNone) != sp {
		return nil, corrupt("flags %#x and pre-tokenizer kind %d do not form a supported pipeline", t.flags, t.pre)
	}
	if t.post > postTemplate {
		return nil, corrupt("unknown post-processor kind %d", t.post)
	}
	if t.vocab == 0 || t.vocab >= 1<<30 {
		return nil, corrupt("vocab size %d out of range", t.vocab)
	}
	if t.addedCount > t.vocab {
		return nil, corrupt("%d added tokens in a vocab of %d", t.addedCount, t.vocab)
	}
	ids := [4]*int{&t.bos, &t.eos, &t.pad, &t.unk}
	for i, p := range ids {
		v := u32(b, 48+4*i)
		if v == noID {
			*p = -1
		} else if int(v) >= t.vocab {
			return nil, corrupt("special id %d (%s) outside vocab of %d", v, [4]string{"bos", "eos", "pad", "unk"}[i], t.vocab)
		} else {
			*p = int(v)
		}
	}
	nsec := int(u32(b, 64))
	if nsec > maxSectionCount || headerSize+nsec*sectionEntrySz > len(b) {
		return nil, corrupt("section table of %d entries does not fit", nsec)
	}
	var sec [secCount + 1][]byte
	for i := 0; i < nsec; i++ {
		o := headerSize + i*sectionEntrySz
		id, off, n := u32(b, o), u32(b, o+4), u32(b, o+8)
		if id == 0 || id > secCount {
			return nil, corrupt("unknown section id %d", id)
		}
		if sec[id] != nil {
			return nil, corrupt("section %d appears twice", id)
		}
		if uint64(off)+uint64(n) > uint64(len(b)) || off < uint32(headerSize+nsec*sectionEntrySz) {
			return nil, corrupt("section %d [%d, +%d) outside the blob of %d bytes", id, off, n, len(b))
		}
		sec[id] = b[off : off+n : off+n]
	}
	for id := 1; id <= secCount; id++ {
		optional := id == secTemplates || id == secTemplateVars
		isDecode := id == secDecodeOffsets || id == secDecodeBytes
		switch {
		case isDecode && !sp && sec[id] != nil:
			return nil, corrupt("section %d is only valid in SentencePiece-style tables", id)
		case sec[id] == nil && !optional && (!isDecode || sp):
			return nil, corrupt("required section %d missing", id)
		}
	}
	if err := t.parseTokens(sec[secTokenBytes], sec[secTokenOffsets], sec[secTokenFlags]); err != nil {
		return nil, err
	}
	if sp {
		if err := t.parseDecode(sec[secDecodeOffsets], sec[secDecodeBytes]); err != nil {
			return nil, err
		}
	}
	if err := t.parseByteIDs(sec[secByteIDs]); err != nil {
		return nil, err
	}
	if err := t.parseMerges(sec[secMerges]); err != nil {
		return nil, err
	}
	if err := t.parseVocabHash(sec[secVocabHash]); err != nil {
		return nil, err
	}
	strs := sec[secStrings]
	if err := t.parseAdded(sec[secAdded], strs); err != nil {
		return nil, err
	}
	if err := t.parseTemplates(sec[secTemplates], sec[secTemplateVars], strs); err != nil {
		return nil, err
	}
	if err := t.parsePost(sec[secPost]); err != nil {
		return nil, err
	}
	return t, nil
}

// offsetsView validates an offsets section of vocab+1 non-decreasing u32s that ends at the
// length of the bytes section it indexes.
func (t *tables) offsetsView(offBytes []byte, nbytes int, what string) ([]uint32, error) {
	if len(offBytes) != 4*(t.vocab+1) {
		return nil, corrupt("%s offsets section is %d bytes, want %d for %d ids", what, len(offBytes), 4*(t.vocab+1), t.vocab)
	}
	offs := u32view(offBytes)
	if offs[0] != 0 {
		return nil, corrupt("first %s offset is %d, want 0", what, offs[0])
	}
	prev := uint32(0)
	for i, o := range offs[1:] {
		if o < prev {
			return nil, corrupt("%s offsets decrease at id %d", what, i)
		}
		prev = o
	}
	if int(prev) != nbytes {
		return nil, corrupt("%s offsets end at %d, the bytes section has %d", what, prev, nbytes)
	}
	return offs, nil
}

func (t *tables) parseTokens(tb, offBytes, flags []byte) error {
	offs, err := t.offsetsView(offBytes, len(tb), "token")
	if err != nil {
		return err
	}
	if len(flags) != t.vocab {
		return corrupt("token flags section is %d bytes, want %d", len(flags), t.vocab)
	}
	sp := t.flags&flagByteFallback != 0
	for i, f := range flags {
		if f&^uint8(tokAll) != 0 || (f&tokPresent == 0 && f != 0) || (f&tokByte != 0 && !sp) {
			return corrupt("bad flags %#x for id %d", f, i)
		}
	}
	t.tokBytes, t.tokOffs, t.tokFlags = tb, offs, flags
	return nil
}

// parseDecode validates the SentencePiece-style decode sections: a byte-fallback id decodes to
// exactly one byte, every other id to valid UTF-8 (so decoded text needs no repair beyond the
// byte groups).
func (t *tables) parseDecode(offBytes, db []byte) error {
	offs, err := t.offsetsView(offBytes, len(db), "decode")
	if err != nil {
		return err
	}
	// Other ids are checked a run at a time: a run of entries is valid UTF-8 entry by entry when
	// it is valid as a whole and no entry starts with a continuation byte (then every entry
	// boundary is a character boundary). One utf8.Valid per run instead of per id keeps Load fast.
	runStart := 0
	checkRun := func(end int) error {
		if !utf8.Valid(db[offs[runStart]:offs[end]]) {
			for id := runStart; id < end; id++ {
				if !utf8.Valid(db[offs[id]:offs[id+1]]) {
					return corrupt("id %d decodes to invalid UTF-8", id)
				}
			}
		}
		return nil
	}
	for id := 0; id < t.vocab; id++ {
		d := db[offs[id]:offs[id+1]]
		if t.tokFlags[id]&tokByte != 0 {
			if len(d) != 1 {
				return corrupt("byte-fallback id %d decodes to %d bytes, want 1", id, len(d))
			}
			if err := checkRun(id); err != nil {
				return err
			}
			runStart = id + 1
		} else if len(d) > 0 && d[0]&0xC0 == 0x80 {
			return corrupt("id %d decodes to invalid UTF-8 (starts with a continuation byte)", id)
		}
	}
	if err := checkRun(t.vocab); err != nil {
		return err
	}
	t.decBytes, t.decOffs = db, offs
	return nil
}

func (t *tables) tokenBytes(id int) []byte {
	return t.tokBytes[t.tokOffs[id]:t.tokOffs[id+1]]
}

// decodeBytes returns what id decodes to: its token bytes in byte-level tables, the decode
// section's entry in SentencePiece-style ones.
func (t *tables) decodeBytes(id int) []byte {
	if t.decOffs == nil {
		return t.tokenBytes(id)
	}
	return t.decBytes[t.decOffs[id]:t.decOffs[id+1]]
}

func (t *tables) parseByteIDs(s []byte) error {
	if len(s) != 1024 {
		return corrupt("byte-id section is %d bytes, want 1024", len(s))
	}
	for b := 0; b < 256; b++ {
		id := u32(s, 4*b)
		if int(id) >= t.vocab {
			return corrupt("byte %#02x maps to id %d outside vocab", b, id)
		}
		if tb := t.decodeBytes(int(id)); len(tb) != 1 || tb[0] != byte(b) {
			return corrupt("byte %#02x maps to id %d whose bytes are %q", b, id, tb)
		}
		if sp := t.flags&flagByteFallback != 0; sp && t.tokFlags[id]&tokByte == 0 {
			return corrupt("byte %#02x maps to id %d, which is not a byte-fallback token", b, id)
		}
		t.byteIDs[b] = id
	}
	return nil
}

func pow2Table(s []byte, entry int, what string) (capacity int, used int, body []byte, err error) {
	if len(s) < 8 {
		return 0, 0, nil, corrupt("%s section is %d bytes, too short", what, len(s))
	}
	c, u := u32(s, 0), u32(s, 4)
	if c == 0 || c&(c-1) != 0 || c > 1<<28 {
		return 0, 0, nil, corrupt("%s capacity %d is not a power of two", what, c)
	}
	if u >= c {
		return 0, 0, nil, corrupt("%s holds %d entries in %d slots (needs a free slot)", what, u, c)
	}
	if uint64(len(s)) != 8+uint64(c)*uint64(entry) {
		return 0, 0, nil, corrupt("%s section is %d bytes, want %d", what, len(s), 8+uint64(c)*uint64(entry))
	}
	return int(c), int(u), s[8:], nil
}

func (t *tables) parseMerges(s []byte) error {
	c, used, body, err := pow2Table(s, mergeEntrySize, "merges")
	if err != nil {
		return err
	}
	if used > t.mergesListed {
		return corrupt("merges table holds %d entries, more than the %d listed", used, t.mergesListed)
	}
	m := u32view(body)
	n := 0
	vocab, listed := uint32(t.vocab), uint32(t.mergesListed)
	for i := 0; i+4 <= len(m); i += 4 {
		e := m[i : i+4 : i+4]
		if e[0] == noID {
			continue
		}
		n++
		if e[0] >= vocab || e[1] >= vocab || e[3] >= vocab || e[2] >= listed {
			return corrupt("merge slot %d (%d %d -> %d, rank %d) out of range", i/4, e[0], e[1], e[3], e[2])
		}
	}
	if n != used {
		return corrupt("merges table has %d entries, header says %d", n, used)
	}
	t.merges = m
	t.mergeBits = uint(bits.TrailingZeros(uint(c)))
	t.mergeMask = uint64(c - 1)
	return nil
}

func (t *tables) parseVocabHash(s []byte) error {
	c, used, body, err := pow2Table(s, 4, "vocab hash")
	if err != nil {
		return err
	}
	h := u32view(body)
	n := 0
	for i, v := range h {
		if v == 0 {
			continue
		}
		n++
		if v > uint32(t.vocab) {
			return corrupt("vocab hash slot %d names id %d outside the vocab", i, v-1)
		}
	}
	if n != used {
		return corrupt("vocab hash has %d entries, header says %d", n, used)
	}
	t.vocabHash = h
	t.vocabBits = uint(bits.TrailingZeros(uint(c)))
	t.vocabMask = uint64(c - 1)
	return nil
}

func strAt(strs []byte, off, n uint32, what string) (string, error) {
	if uint64(off)+uint64(n) > uint64(len(strs)) {
		return "", corrupt("%s [%d, +%d) outside the strings section of %d bytes", what, off, n, len(strs))
	}
	s := strs[off : off+n]
	if !utf8.Valid(s) {
		return "", corrupt("%s is not valid UTF-8", what)
	}
	return string(s), nil
}

func (t *tables) parseAdded(s, strs []byte) error {
	n := t.addedCount
	if uint64(len(s)) != uint64(n)*addedEntrySize {
		return corrupt("added-token section is %d bytes, want %d entries of %d", len(s), n, addedEntrySize)
	}
	t.added = make([]addedSpec, n)
	for i := range t.added {
		e := s[i*addedEntrySize:]
		a := addedSpec{id: u32(e, 0), flags: u32(e, 4)}
		if int(a.id) >= t.vocab || t.tokFlags[a.id]&tokAdded == 0 {
			return corrupt("added token %d has id %d, not an added id", i, a.id)
		}
		if a.flags&^uint32(addSpecial|addLstrip|addRstrip|addSingleWord|addNormalized) != 0 {
			return corrupt("added token %d has unknown flags %#x", i, a.flags)
		}
		var err error
		if a.content, err = strAt(strs, u32(e, 8), u32(e, 12), "added token content"); err != nil {
			return err
		}
		if a.normalized, err = strAt(strs, u32(e, 16), u32(e, 20), "added token normalized form"); err != nil {
			return err
		}
		if a.content == "" || a.normalized == "" {
			return corrupt("added token %d is empty", i)
		}
		t.added[i] = a
	}
	return nil
}

func (t *tables) parseTemplates(ts, vs, strs []byte) error {
	if ts != nil {
		if len(ts) < 4 || uint64(len(ts)) != 4+uint64(u32(ts, 0))*tmplEntrySize {
			return corrupt("templates section is %d bytes, inconsistent with its count", len(ts))
		}
		for i := 0; i < int(u32(ts, 0)); i++ {
			e := ts[4+i*tmplEntrySize:]
			name, err := strAt(strs, u32(e, 0), u32(e, 4), "template name")
			if err != nil {
				return err
			}
			text, err := strAt(strs, u32(e, 8), u32(e, 12), "template text")
			if err != nil {
				return err
			}
			t.templates = append(t.templates, namedText{name, text})
		}
	}
	if vs != nil {
		if len(vs) < 4 || uint64(len(vs)) != 4+uint64(u32(vs, 0))*varEntrySize {
			return corrupt("template vars section is %d bytes, inconsistent with its count", len(vs))
		}
		for i := 0; i < int(u32(vs, 0)); i++ {
			e := vs[4+i*varEntrySize:]
			name, err := strAt(strs, u32(e, 0), u32(e, 4), "template variable name")
			if err != nil {
				return err
			}
			val, err := strAt(strs, u32(e, 8), u32(e, 12), "template variable value")
			if err != nil {
				return err
			}
			kind := u32(e, 16)
			if kind > 1 {
				return corrupt("template variable %q has kind %d", name, kind)
			}
			t.vars = append(t.vars, templateVar{name: name, value: val, list: kind == 1})
		}
	}
	return nil
}

func (t *tables) parsePost(s []byte) error {
	if len(s) < 8 {
		return corrupt("post-processor section is %d bytes, too short", len(s))
	}
	p, q := u32(s, 0), u32(s, 4)
	if uint64(len(s)) != 8+4*(uint64(p)+uint64(q)) {
		return corrupt("post-processor section is %d bytes, want %d", len(s), 8+4*(uint64(p)+uint64(q)))
	}
	ids := make([]uint32, p+q)
	for i := range ids {
		ids[i] = u32(s, 8+4*i)
		if int(ids[i]) >= t.vocab {
			return corrupt("post-processor id %d outside vocab", ids[i])
		}
	}
	t.prefix, t.suffix = ids[:p], ids[p:]
	return nil
}

// deepCheck verifies the semantic invariants that Compile guarantees and that Load, to stay
// within its time budget, does not re-check: every merge spells its result from its two parts
// (so decoding an encoding gives back the text), and every table entry is reachable by probing.
// A blob that passes parseTables but not deepCheck cannot make the Tokenizer panic; it can only
// make it produce wrong ids. Compile and the tests run it.
func (t *tables) deepCheck() error {
	for i := 0; i+4 <= len(t.merges); i += 4 {
		e := t.merges[i : i+4]
		if e[0] == noID {
			continue
		}
		lb, rb, xb := t.tokenBytes(int(e[0])), t.tokenBytes(int(e[1])), t.tokenBytes(int(e[3]))
		if len(lb)+len(rb) != len(xb) || string(xb[:len(lb)]) != string(lb) || string(xb[len(lb):]) != string(rb) {
			return corrupt("merge slot %d: %q + %q does not spell %q", i/4, lb, rb, xb)
		}
		if rank, got := t.merge(e[0], e[1]); rank != e[2] || got != e[3] {
			return corrupt("merge slot %d is not reachable from its hash", i/4)
		}
	}
	for i, v := range t.vocabHash {
		if v == 0 {
			continue
		}
		if t.tokFlags[v-1]&tokModel == 0 {
			return corrupt("vocab hash slot %d names id %d, not a model token", i, v-1)
		}
		h := (fnv64(t.tokenBytes(int(v-1))) * hashMul) >> (64 - t.vocabBits)
		for t.vocabHash[h] != v {
			if t.vocabHash[h] == 0 {
				return corrupt("vocab hash slot %d (id %d) is not reachable from its hash", i, v-1)
			}
			h = (h + 1) & t.vocabMask
		}
	}
	for id := 0; id < t.vocab; id++ {
		f := t.tokFlags[id]
		if f&tokPresent != 0 && f&(tokAdded|tokModel) == 0 {
			return corrupt("id %d is present but neither in the model vocab nor added", id)
		}
	}
	return nil
}
