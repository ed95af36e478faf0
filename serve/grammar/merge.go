package grammar

import "slices"

// maxMergedLiterals bounds the texts mergeLiterals copies into merged nodes, in all, for one
// grammar: an anyOf DAG whose levels all reach the same wide list would otherwise copy it once
// per level.
const maxMergedLiterals = 1 << 16

// mergeLiterals gives each anyOf whose alternatives include several literals (const and enum
// values: the usual way to write a list of names) one literal node holding all their texts in
// their place. A literal node narrows its texts by binary search on each byte, so the list costs
// the same per byte however long it is; as separate alternatives each would be a head of its own,
// and beyond the heads followed at once (maxHeads) the rest of the list could never be written.
// Past maxMergedLiterals the remaining anyOf keep their alternatives as they are.
func (b *Builder) mergeLiterals() {
	left := maxMergedLiterals
	for i := range len(b.g.nodes) {
		n := &b.g.nodes[i]
		if n.kind != kAnyOf {
			continue
		}
		count, texts := 0, 0
		for _, k := range n.kids {
			if l := &b.g.nodes[k]; l.kind == kLiteral {
				count++
				texts += len(l.lits)
			}
		}
		if count < 2 || texts > left {
			continue
		}
		left -= texts
		lits := make([]string, 0, texts)
		kids := make([]int32, 0, len(n.kids)-count+1)
		for _, k := range n.kids {
			if l := &b.g.nodes[k]; l.kind == kLiteral {
				lits = append(lits, l.lits...)
			} else {
				kids = append(kids, k)
			}
		}
		slices.Sort(lits)
		lits = slices.Compact(lits)
		// Appended without add's limit: at most one node per anyOf, and the grammar is complete.
		b.g.nodes = append(b.g.nodes, node{kind: kLiteral, lits: lits})
		b.g.nodes[i].kids = append(kids, int32(len(b.g.nodes)-1))
	}
}
