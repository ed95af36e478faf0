package toolcall

import (
	"encoding/json"
	"strings"
)

// Call is one tool call the model wrote.
type Call struct {
	Name string
	// Arguments is the JSON object of the arguments exactly as the model wrote it (one written
	// as a JSON string holding an object is unwrapped; none at all is "{}").
	Arguments string
	// Pieces are Arguments cut where the generated text arrived (token by token, when the
	// parser is fed as text streams), so a stream can pass the arguments on as they were made.
	// Their concatenation is Arguments.
	Pieces []string
}

// Event is one piece of parsed output: content text, reasoning text (harmony's analysis
// channel; only [HarmonyParser] reports it), or (Call not nil) a complete call. One of the three
// is set.
type Event struct {
	Text      string
	Reasoning string
	Call      *Call
}

// Parser splits generated text into content and tool calls as it arrives. Content that may be
// the beginning of a call (a partial "<tool_call>", a Llama answer that begins with "{") is held
// back until it is certain; a call is reported once it is complete and parses. Whitespace
// between calls, and around them when there is no other text, is not content. A Parser is not
// safe for concurrent use.
type Parser struct {
	f     Format
	calls int
	// Hermes: in a <tool_call> block or not; held-back content; after a call (leading
	// whitespace of the content that follows is dropped).
	inBlock   bool
	hold      string
	afterCall bool
	blockLead string // whitespace before <tool_call>: content again if the block is not a call
	// The current block (Hermes: after <tool_call>; Llama: the whole JSON part) and where fed
	// pieces ended in it, for Call.Pieces.
	block strings.Builder
	cuts  []int
	// Llama 3: started (past leading whitespace), json (the answer is calls), content (it is
	// not); scanner of the object in progress.
	started, json, content bool
	scan                   objScanner
}

// NewParser returns a parser for format f; with None every byte is content.
func NewParser(f Format) *Parser { return &Parser{f: f} }

// Calls returns how many calls have been reported.
func (p *Parser) Calls() int { return p.calls }

// Push feeds the next piece of generated text and returns what is now certain.
func (p *Parser) Push(text string) []Event {
	var ev []Event
	switch p.f {
	case Hermes:
		ev = p.pushHermes(text, ev)
	case Llama3JSON:
		ev = p.pushLlama(text, ev)
	default:
		ev = addText(ev, text)
	}
	return ev
}

// Finish ends the text: what was held back is content now (whitespace only if no call came),
// and an unfinished call is returned as the text the model wrote.
func (p *Parser) Finish() []Event {
	var ev []Event
	switch p.f {
	case Hermes:
		if p.inBlock {
			ev = addText(ev, p.blockLead+hermesOpen+p.block.String())
			p.block.Reset()
			p.inBlock = false
		} else if p.calls == 0 || strings.TrimSpace(p.hold) != "" {
			ev = addText(ev, p.hold)
		}
	case Llama3JSON:
		switch {
		case p.json:
			if rest := p.block.String()[p.scan.start:]; strings.TrimLeft(rest, " \t\r\n;") != "" {
				ev = addText(ev, rest)
			}
		case p.calls == 0:
			ev = addText(ev, p.hold)
		}
	}
	p.hold = ""
	return ev
}

func addText(ev []Event, s string) []Event {
	if s == "" {
		return ev
	}
	if n := len(ev); n > 0 && ev[n-1].Call == nil && ev[n-1].Reasoning == "" {
		ev[n-1].Text += s
		return ev
	}
	return append(ev, Event{Text: s})
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (p *Parser) pushHermes(text string, ev []Event) []Event {
	for {
		if p.inBlock {
			p.block.WriteString(text)
			p.cuts = append(p.cuts, p.block.Len())
			b := p.block.String()
			end := strings.Index(b, hermesClose)
			if end < 0 {
				return ev
			}
			inner, rest := b[:end], b[end+len(hermesClose):]
			c := parseCall(inner, 0, p.cuts, "arguments")
			if c != nil {
				ev = append(ev, Event{Call: c})
				p.calls++
			} else {
				ev = addText(ev, p.blockLead+hermesOpen+inner+hermesClose)
			}
			p.inBlock, p.afterCall = false, c != nil
			p.block.Reset()
			p.cuts = p.cuts[:0]
			text = rest
			continue
		}
		buf := p.hold + text
		p.hold = ""
		if p.afterCall {
			buf = strings.TrimLeft(buf, " \t\r\n")
			if buf == "" {
				return ev
			}
			p.afterCall = false
		}
		if i := strings.Index(buf, hermesOpen); i >= 0 {
			before := strings.TrimRight(buf[:i], " \t\r\n")
			ev = addText(ev, before)
			p.inBlock, p.blockLead = true, buf[len(before):i]
			text = buf[i+len(hermesOpen):]
			continue
		}
		// Hold back a possible beginning of <tool_call>, and the whitespace before it or at
		// the end (it is dropped if a call follows).
		keep := 0
		for k := min(len(hermesOpen)-1, len(buf)); k > 0; k-- {
			if strings.HasSuffix(buf, hermesOpen[:k]) {
				keep = k
				break
			}
		}
		cut := len(buf) - keep
		for cut > 0 && isSpace(buf[cut-1]) {
			cut--
		}
		ev = addText(ev, buf[:cut])
		p.hold = buf[cut:]
		return ev
	}
}

func (p *Parser) pushLlama(text string, ev []Event) []Event {
	if p.content {
		return addText(ev, text)
	}
	if !p.started {
		buf := p.hold + text
		t := strings.TrimLeft(buf, " \t\r\n")
		switch {
		case t == "" || (len(t) < len(pythonTag) && strings.HasPrefix(pythonTag, t)):
			p.hold = buf
			return ev
		case strings.HasPrefix(t, pythonTag):
			t = t[len(pythonTag):]
		case t[0] != '{':
			p.content, p.started = true, true
			p.hold = ""
			return addText(ev, buf)
		}
		p.started, p.json, p.hold = true, true, ""
		text = t
	}
	p.block.WriteString(text)
	p.cuts = append(p.cuts, p.block.Len())
	b := p.block.String()
	for {
		start, end, state := p.scan.next(b)
		switch state {
		case scanMore:
			return ev
		case scanObject:
			if c := parseCall(b[start:end], start, p.cuts, "parameters"); c != nil {
				ev = append(ev, Event{Call: c})
				p.calls++
				continue
			}
			fallthrough
		case scanOther:
			// Not a call after all: everything from here on is content.
			p.json, p.content = false, true
			return addText(ev, b[start:])
		}
	}
}

// parseCall reads one call object {"name": ..., "arguments"|"parameters": {...}}; off is the
// object's offset in the text the cuts refer to. It returns nil for anything else.
func parseCall(s string, off int, cuts []int, argsKey string) *Call {
	s, lead := trimSpace(s)
	off += lead
	fields, ok := scanFields(s)
	if !ok {
		return nil
	}
	c := &Call{}
	var args *field
	for i := range fields {
		f := &fields[i]
		switch f.key {
		case "name":
			if json.Unmarshal([]byte(s[f.start:f.end]), &c.Name) != nil || c.Name == "" {
				return nil
			}
		case "arguments", "parameters":
			if f.key == argsKey || args == nil {
				args = f
			}
		}
	}
	if c.Name == "" {
		return nil
	}
	switch {
	case args == nil || s[args.start:args.end] == "null":
		c.Arguments = "{}"
	case s[args.start] == '{':
		c.Arguments = s[args.start:args.end]
		c.Pieces = split(c.Arguments, off+args.start, cuts)
	case s[args.start] == '"':
		var inner string
		if json.Unmarshal([]byte(s[args.start:args.end]), &inner) != nil {
			return nil
		}
		inner, _ = trimSpace(inner)
		if !json.Valid([]byte(inner)) || !strings.HasPrefix(inner, "{") {
			return nil
		}
		c.Arguments = inner
	default:
		return nil
	}
	if c.Pieces == nil {
		c.Pieces = []string{c.Arguments}
	}
	return c
}

// split cuts s, found at offset off of the fed text, where fed pieces ended.
func split(s string, off int, cuts []int) []string {
	var out []string
	last := 0
	for _, c := range cuts {
		c -= off
		if c > last && c < len(s) {
			out = append(out, s[last:c])
			last = c
		}
	}
	return append(out, s[last:])
}

func trimSpace(s string) (string, int) {
	lead := 0
	for lead < len(s) && isSpace(s[lead]) {
		lead++
	}
	end := len(s)
	for end > lead && isSpace(s[end-1]) {
		end--
	}
	return s[lead:end], lead
}

// field is one member of a JSON object: its key and where its value is.
type field struct {
	key        string
	start, end int
}

// scanFields returns the members of s, which must be exactly one valid JSON object.
func scanFields(s string) ([]field, bool) {
	if len(s) == 0 || s[0] != '{' || !json.Valid([]byte(s)) {
		return nil, false
	}
	var out []field
	i := 1
	for {
		i = skipSpace(s, i)
		if s[i] == '}' {
			return out, true
		}
		kEnd := skipValue(s, i)
		var key string
		if json.Unmarshal([]byte(s[i:kEnd]), &key) != nil {
			return nil, false
		}
		i = skipSpace(s, kEnd) + 1 // ':'
		i = skipSpace(s, i)
		vEnd := skipValue(s, i)
		out = append(out, field{key: key, start: i, end: vEnd})
		i = skipSpace(s, vEnd)
		if s[i] == ',' {
			i++
		}
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at s[i] (s is valid JSON).
func skipValue(s string, i int) int {
	depth, inStr, esc := 0, false, false
	for j := i; j < len(s); j++ {
		c := s[j]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return j + 1
			}
			if depth < 0 {
				return j
			}
		case depth == 0 && (c == ',' || isSpace(c)):
			return j
		}
	}
	return len(s)
}

// objScanner finds the JSON objects of a Llama answer one after the other as text arrives:
// objects separated by ";" and whitespace.
type objScanner struct {
	pos, start     int // where scanning resumes; where the object in progress (or the rest) begins
	depth          int
	inStr, esc, in bool
}

const (
	scanMore   = iota // need more text
	scanObject        // an object is complete: [start, end)
	scanOther         // something that is not an object begins at start
)

func (sc *objScanner) next(b string) (start, end, state int) {
	for sc.pos < len(b) {
		c := b[sc.pos]
		sc.pos++
		if !sc.in {
			switch {
			case isSpace(c) || c == ';':
				sc.start = sc.pos
				continue
			case c != '{':
				return sc.pos - 1, 0, scanOther
			}
			sc.in, sc.depth, sc.start = true, 0, sc.pos-1
		}
		switch {
		case sc.inStr:
			switch {
			case sc.esc:
				sc.esc = false
			case c == '\\':
				sc.esc = true
			case c == '"':
				sc.inStr = false
			}
		case c == '"':
			sc.inStr = true
		case c == '{' || c == '[':
			sc.depth++
		case c == '}' || c == ']':
			sc.depth--
			if sc.depth == 0 {
				sc.in = false
				start := sc.start
				sc.start = sc.pos
				return start, sc.pos, scanObject
			}
		}
	}
	return sc.start, 0, scanMore
}
