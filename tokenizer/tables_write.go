package tokenizer

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/bits"
)

// Serialization of compiled tables (layout documented in tables.go).

// spec is everything Compile extracted from the JSON files; writeTables serializes it.
type spec struct {
	flags          uint32
	pre            preKind
	post           uint32
	modelVocab     uint32
	mergesListed   uint32
	tokens         [][]byte // key bytes per id: decode bytes (byte-level) or spelling (SentencePiece-style)
	decode         [][]byte // SentencePiece-style only: decode bytes per id
	tokFlags       []uint8
	merges         []mergeSpec // unique pairs
	byteIDs        [256]uint32
	added          []addedSpec
	prefix, suffix []uint32
	bos, eos       uint32
	pad, unk       uint32
	templates      []namedText
	vars           []templateVar
}

type mergeSpec struct{ left, right, rank, result uint32 }

type addedSpec struct {
	id         uint32
	flags      uint32
	content    string
	normalized string
}

type namedText struct{ name, text string }

type templateVar struct {
	name  string
	value string
	list  bool
}

func fnv64[T string | []byte](b T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= 1099511628211
	}
	return h
}

// hashCapacity returns a power of two at least 1.5 n + 1, so at least one slot stays empty.
func hashCapacity(n int) int {
	c := 16
	for c < n+n/2+1 {
		c <<= 1
	}
	return c
}

type blobWriter struct {
	buf      []byte
	sections [][3]uint32
}

func (w *blobWriter) section(id uint32, data []byte) {
	for len(w.buf)%8 != 0 {
		w.buf = append(w.buf, 0)
	}
	w.sections = append(w.sections, [3]uint32{id, uint32(len(w.buf)), uint32(len(data))})
	w.buf = append(w.buf, data...)
}

func le32s(vals ...uint32) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], v)
	}
	return out
}

// writeTables serializes s in the format described above.
func writeTables(s *spec) ([]byte, error) {
	v := len(s.tokens)
	sp := s.flags&flagByteFallback != 0
	nSections := 11
	if sp {
		nSections += 2
	}
	w := &blobWriter{buf: make([]byte, headerSize+nSections*sectionEntrySz)}

	// Strings section is assembled while the other sections reference it.
	var strs []byte
	addStr := func(t string) (uint32, uint32) {
		off := uint32(len(strs))
		strs = append(strs, t...)
		return off, uint32(len(t))
	}

	var tb []byte
	offs := make([]uint32, v+1)
	for i, t := range s.tokens {
		offs[i] = uint32(len(tb))
		tb = append(tb, t...)
	}
	offs[v] = uint32(len(tb))
	if uint64(len(tb)) > 1<<31 {
		return nil, errors.New("token bytes exceed 2 GiB")
	}
	w.section(secTokenBytes, tb)
	w.section(secTokenOffsets, le32s(offs...))
	w.section(secTokenFlags, s.tokFlags)
	if sp {
		var db []byte
		doffs := make([]uint32, v+1)
		for i, d := range s.decode {
			doffs[i] = uint32(len(db))
			db = append(db, d...)
		}
		doffs[v] = uint32(len(db))
		w.section(secDecodeOffsets, le32s(doffs...))
		w.section(secDecodeBytes, db)
	}

	// Merges hash table.
	mc := hashCapacity(len(s.merges))
	mbits := uint(bits.TrailingZeros(uint(mc)))
	mt := make([]byte, 8+mc*mergeEntrySize)
	binary.LittleEndian.PutUint32(mt[0:], uint32(mc))
	binary.LittleEndian.PutUint32(mt[4:], uint32(len(s.merges)))
	slots := mt[8:]
	for i := 0; i < mc; i++ {
		binary.LittleEndian.PutUint32(slots[i*mergeEntrySize:], noID)
	}
	for _, m := range s.merges {
		h := ((uint64(m.left)<<32 | uint64(m.right)) * hashMul) >> (64 - mbits)
		for binary.LittleEndian.Uint32(slots[h*mergeEntrySize:]) != noID {
			h = (h + 1) & uint64(mc-1)
		}
		e := slots[h*mergeEntrySize:]
		binary.LittleEndian.PutUint32(e[0:], m.left)
		binary.LittleEndian.PutUint32(e[4:], m.right)
		binary.LittleEndian.PutUint32(e[8:], m.rank)
		binary.LittleEndian.PutUint32(e[12:], m.result)
	}
	w.section(secMerges, mt)

	// Vocab hash over model-vocab ids.
	n := 0
	for _, f := range s.tokFlags {
		if f&tokModel != 0 {
			n++
		}
	}
	vc := hashCapacity(n)
	vbits := uint(bits.TrailingZeros(uint(vc)))
	vt := make([]byte, 8+4*vc)
	binary.LittleEndian.PutUint32(vt[0:], uint32(vc))
	binary.LittleEndian.PutUint32(vt[4:], uint32(n))
	for id, f := range s.tokFlags {
		if f&tokModel == 0 {
			continue
		}
		h := (fnv64(s.tokens[id]) * hashMul) >> (64 - vbits)
		for binary.LittleEndian.Uint32(vt[8+4*h:]) != 0 {
			h = (h + 1) & uint64(vc-1)
		}
		binary.LittleEndian.PutUint32(vt[8+4*h:], uint32(id)+1)
	}
	w.section(secVocabHash, vt)
	w.section(secByteIDs, le32s(s.byteIDs[:]...))

	at := make([]byte, 0, addedEntrySize*len(s.added))
	for _, a := range s.added {
		co, cl := addStr(a.content)
		no, nl := addStr(a.normalized)
		at = append(at, le32s(a.id, a.flags, co, cl, no, nl)...)
	}
	w.section(secAdded, at)

	tt := le32s(uint32(len(s.templates)))
	for _, t := range s.templates {
		no, nl := addStr(t.name)
		to, tl := addStr(t.text)
		tt = append(tt, le32s(no, nl, to, tl)...)
	}
	vv := le32s(uint32(len(s.vars)))
	for _, tv := range s.vars {
		no, nl := addStr(tv.name)
		vo, vl := addStr(tv.value)
		kind := uint32(0)
		if tv.list {
			kind = 1
		}
		vv = append(vv, le32s(no, nl, vo, vl, kind)...)
	}
	pp := le32s(uint32(len(s.prefix)), uint32(len(s.suffix)))
	pp = append(pp, le32s(s.prefix...)...)
	pp = append(pp, le32s(s.suffix...)...)
	w.section(secTemplates, tt)
	w.section(secTemplateVars, vv)
	w.section(secPost, pp)
	w.section(secStrings, strs)
	for len(w.buf)%8 != 0 {
		w.buf = append(w.buf, 0)
	}
	if uint64(len(w.buf)) > 1<<32-1 {
		return nil, errors.New("compiled tables exceed 4 GiB")
	}

	h := w.buf
	copy(h[0:8], tablesMagic[:])
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(h[off:], v) }
	version := uint32(1)
	if s.flags&^flagsV1 != 0 || s.pre > preGPT2 {
		version = 2
	}
	put(8, version)
	put(12, uint32(len(h)))
	put(20, s.flags)
	put(24, uint32(s.pre))
	put(28, s.post)
	put(32, uint32(v))
	put(36, s.modelVocab)
	put(40, s.mergesListed)
	put(44, uint32(len(s.added)))
	put(48, s.bos)
	put(52, s.eos)
	put(56, s.pad)
	put(60, s.unk)
	put(64, uint32(len(w.sections)))
	for i, sec := range w.sections {
		o := headerSize + i*sectionEntrySz
		put(o, sec[0])
		put(o+4, sec[1])
		put(o+8, sec[2])
	}
	put(16, crc32.Checksum(h, crcTable))
	return h, nil
}
