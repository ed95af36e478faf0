package mil

import (
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/anepack/anepack/blobfile"
)

// Blob layouts: how the tensors of a program are spread over weight files.
const (
	// LayoutPacked is the bundle's own layout: several records in one file, named by their
	// offsets (64, then 64 + the records before).
	LayoutPacked = "packed"
	// LayoutSplit gives every tensor a file of its own, one record at offset 64: the only
	// layout one report says works on M1 (docs/ane.md, "Blob layouts").
	LayoutSplit = "split"
)

// SplitBlobs rewrites a program for LayoutSplit: every BLOBFILE(path, offset) of the text
// that names a record other than the only one of its file is pointed at a new file of its
// own, <path stem>.r<k><ext> at offset 64, made of a fresh header, the record's metadata
// (payload offset set to 128) and a copy of its payload. Files already holding one record
// named at offset 64 are passed through without a copy. The text is changed only inside the
// rewritten path strings and offset numbers; everything else stays byte for byte. The
// returned weights hold exactly the files the new text names.
func SplitBlobs(text []byte, weights map[string][]byte) ([]byte, map[string][]byte, error) {
	refs, err := blobRefs(text)
	if err != nil {
		return nil, nil, err
	}
	offsets := map[string][]uint64{} // path -> distinct record offsets named, ascending
	for _, r := range refs {
		if !slices.Contains(offsets[r.ref.Path], r.ref.Offset) {
			offsets[r.ref.Path] = append(offsets[r.ref.Path], r.ref.Offset)
		}
	}
	out := map[string][]byte{}
	newPath := map[BlobRef]string{}
	paths := make([]string, 0, len(offsets))
	for p := range offsets {
		paths = append(paths, p)
	}
	slices.Sort(paths) // the same error for the same input
	for _, p := range paths {
		offs := offsets[p]
		slices.Sort(offs)
		data, ok := weights[p]
		if !ok {
			return nil, nil, fmt.Errorf("mil: BLOBFILE path %q is not in the weights", p)
		}
		f, err := blobfile.Parse(data)
		if err != nil {
			return nil, nil, fmt.Errorf("mil: weight file %q: %w", p, err)
		}
		if len(offs) == 1 && offs[0] == blobfile.HeaderSize && f.Count == 1 {
			out[p] = data // already one record at offset 64
			newPath[BlobRef{p, offs[0]}] = p
			continue
		}
		for k, off := range offs {
			if off > uint64(len(data)) {
				return nil, nil, fmt.Errorf("mil: weight file %q: offset %d is past its end", p, off)
			}
			rec, err := f.RecordAt(int64(off))
			if err != nil {
				return nil, nil, fmt.Errorf("mil: weight file %q: %w", p, err)
			}
			np := recordPath(p, k)
			if _, taken := weights[np]; taken {
				return nil, nil, fmt.Errorf("mil: cannot split %q: the name %q of its record %d is already a weight file", p, np, k)
			}
			out[np] = singleRecord(data[off:off+blobfile.RecordSize], f.Payload(rec))
			newPath[BlobRef{p, off}] = np
		}
	}
	type edit struct {
		start, end int
		with       string
	}
	var edits []edit
	for _, r := range refs {
		if np := newPath[r.ref]; np != r.ref.Path {
			edits = append(edits, edit{r.pathStart, r.pathEnd, quoteMIL(np)}, edit{r.offStart, r.offEnd, "64"})
		}
	}
	// Apply from the end of the text so that earlier byte positions stay valid.
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	res := slices.Clone(text)
	for _, e := range edits {
		res = slices.Concat(res[:e.start], []byte(e.with), res[e.end:])
	}
	return res, out, nil
}

// recordPath names the file of record k of a blob: "@model_path/weights/mlp.bin", 1 ->
// "@model_path/weights/mlp.r1.bin".
func recordPath(p string, k int) string {
	ext := path.Ext(p)
	return strings.TrimSuffix(p, ext) + ".r" + strconv.Itoa(k) + ext
}

// singleRecord builds a blob file holding one record: the header, the record's 64 metadata
// bytes with the payload offset set to 128, the payload, and zero padding to 64 bytes.
func singleRecord(meta, payload []byte) []byte {
	n := blobfile.HeaderSize + blobfile.RecordSize + len(payload)
	b := make([]byte, 0, (n+blobfile.Align-1)/blobfile.Align*blobfile.Align)
	b = blobfile.AppendHeader(b, 1)
	b = append(b, meta...)
	binary.LittleEndian.PutUint64(b[blobfile.HeaderSize+16:], blobfile.HeaderSize+blobfile.RecordSize)
	b = append(b, payload...)
	return b[:cap(b)] // the padding is the zeroed rest of the capacity
}

// quoteMIL writes s as a MIL string literal.
func quoteMIL(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// blobRefText is one BLOBFILE reference and the byte spans of its path string literal and
// offset number in the text.
type blobRefText struct {
	ref                BlobRef
	pathStart, pathEnd int
	offStart, offEnd   int
}

// blobRefs finds every BLOBFILE(path = ..., offset = ...) of the text with the positions of its
// path string and offset number, in text order.
func blobRefs(text []byte) ([]blobRefText, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	lineStart := []int{0}
	for i, c := range text {
		if c == '\n' {
			lineStart = append(lineStart, i+1)
		}
	}
	at := func(t token) int { return lineStart[t.pos.Line-1] + t.pos.Col - 1 }
	var refs []blobRefText
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != tokIdent || toks[i].text != "BLOBFILE" || toks[i+1].text != "(" {
			continue
		}
		p := &parser{toks: toks, i: i}
		var lit Literal
		if err := p.blobfile(&lit); err != nil {
			return nil, err
		}
		r := blobRefText{ref: *lit.Blob, pathStart: -1, offStart: -1}
		field := ""
		for _, t := range toks[i+2 : p.i] {
			switch {
			case t.kind == tokIdent && (t.text == "path" || t.text == "offset") && field == "":
				field = t.text
			case t.kind == tokString && field == "path":
				r.pathStart = at(t)
				_, n, _ := scanString(text[r.pathStart:])
				r.pathEnd = r.pathStart + n
				field = ""
			case t.kind == tokNumber && field == "offset":
				r.offStart = at(t)
				r.offEnd = scanNumber(text, r.offStart)
				field = ""
			}
		}
		if r.pathStart < 0 || r.offStart < 0 {
			return nil, &SyntaxError{toks[i].pos, "BLOBFILE path or offset is not a plain literal"}
		}
		refs = append(refs, r)
		i = p.i - 1
	}
	return refs, nil
}
