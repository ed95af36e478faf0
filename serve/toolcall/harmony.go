package toolcall

import (
	"encoding/json"
	"strings"
)

// gpt-oss answers in the harmony format: a sequence of messages, each a header, <|message|>,
// the text and a terminator. The prompt ends with "<|start|>assistant", so the first header
// is only the rest of it:
//
//	<|channel|>analysis<|message|>reasoning<|end|>
//	<|start|>assistant<|channel|>final<|message|>answer<|return|>
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
//
// The recipient (to=...) may also follow the role ("<|start|>assistant to=functions.NAME
// <|channel|>commentary json"). <|return|> and <|call|> end the generation (they are the model's
// end-of-sequence ids, so a stream usually stops before them); <|end|> ends a message after
// which another follows.

// Harmony control tokens as they appear in text decoded with special tokens kept.
const (
	harmonyStart   = "<|start|>"
	harmonyChannel = "<|channel|>"
	harmonyMessage = "<|message|>"
)

// harmonyEnds are the tokens that end a message's text.
var harmonyEnds = [...]string{"<|end|>", "<|return|>", "<|call|>"}

// harmonyHeaderStarts are what a header can begin with: a new message, the channel of the first
// message, or its recipient.
var harmonyHeaderStarts = [...]string{harmonyStart, harmonyChannel, " to=", "to="}

// maxHarmonyHeader bounds a header; a longer run without <|message|> is not harmony output and
// is passed on as content.
const maxHarmonyHeader = 512

// harmonyKind is what a message's text is for the client.
type harmonyKind int

const (
	harmonyContent   harmonyKind = iota // final channel, or commentary to nobody (a preamble)
	harmonyReasoning                    // analysis channel, or a message to a built-in tool
	harmonyCall                         // commentary to functions.NAME: a tool call
)

// HarmonyParser splits the text of a harmony answer (decoded with special tokens as text) into
// reasoning, content and tool calls as it arrives: the analysis channel is reasoning, the final
// channel content, a commentary message to functions.NAME a call whose arguments are its JSON
// text. A commentary message to nobody (a preamble the model writes for the user before a call)
// is content; a message to another recipient (a built-in tool such as browser.search, which the
// server does not run) is reasoning. Reasoning and content are passed on as they arrive, except
// for a tail that may be the beginning of a control token; a call is reported once complete.
// Text that does not begin like a harmony header is content. A HarmonyParser is not safe for
// concurrent use.
type HarmonyParser struct {
	raw    bool   // the text is not harmony: everything is content
	inBody bool   // after <|message|>: text of the current message
	hold   string // header so far, or a body tail that may begin a control token
	kind   harmonyKind
	name   string // the called function
	// The call's text and where fed pieces ended in it, for Call.Pieces.
	block strings.Builder
	cuts  []int
	calls int
}

// NewHarmonyParser returns a parser for the answer that follows a prompt ending with the
// generation prompt <|start|>assistant.
func NewHarmonyParser() *HarmonyParser { return &HarmonyParser{} }

// Calls returns how many calls have been reported.
func (p *HarmonyParser) Calls() int { return p.calls }

// Push feeds the next piece of generated text and returns what is now certain.
func (p *HarmonyParser) Push(text string) []Event {
	var ev []Event
	if p.raw {
		return addText(ev, text)
	}
	for {
		if !p.inBody {
			h := p.hold + text
			i := strings.Index(h, harmonyMessage)
			if i < 0 {
				if !plausibleHeader(h) || len(h) > maxHarmonyHeader {
					p.raw, p.hold = true, ""
					return addText(ev, h)
				}
				p.hold = h
				return ev
			}
			p.openMessage(h[:i])
			p.hold, p.inBody = "", true
			text = h[i+len(harmonyMessage):]
			continue
		}
		b := p.hold + text
		end, n := firstEnd(b)
		if end < 0 {
			keep := partialEnd(b)
			ev = p.body(ev, b[:len(b)-keep])
			p.hold = b[len(b)-keep:]
			return ev
		}
		ev = p.body(ev, b[:end])
		ev = p.closeMessage(ev)
		p.hold, p.inBody = "", false
		text = b[end+n:]
		if text == "" {
			return ev
		}
	}
}

// Finish ends the text: a held-back tail belongs to the message it was in, an unfinished call
// is returned as the text the model wrote, and an unfinished header is dropped.
func (p *HarmonyParser) Finish() []Event {
	var ev []Event
	if p.inBody {
		ev = p.body(ev, p.hold)
		ev = p.closeMessage(ev)
		p.inBody = false
	}
	p.hold = ""
	return ev
}

// plausibleHeader reports whether h can be the beginning of a header.
func plausibleHeader(h string) bool {
	for _, s := range harmonyHeaderStarts {
		if strings.HasPrefix(h, s) || strings.HasPrefix(s, h) {
			return true
		}
	}
	return false
}

// openMessage reads a header (the text before <|message|>) and sets what the message is.
func (p *HarmonyParser) openMessage(h string) {
	h = strings.TrimPrefix(h, harmonyStart)
	var channel, recipient string
	if i := strings.Index(h, harmonyChannel); i >= 0 {
		channel = headerWord(h[i+len(harmonyChannel):])
	}
	if i := strings.Index(h, "to="); i >= 0 {
		recipient = headerWord(h[i+len("to="):])
	}
	p.name = ""
	switch {
	case strings.HasPrefix(recipient, "functions.") && len(recipient) > len("functions."):
		p.kind, p.name = harmonyCall, recipient[len("functions."):]
		p.block.Reset()
		p.cuts = p.cuts[:0]
	case recipient != "", channel == "analysis":
		p.kind = harmonyReasoning
	default:
		p.kind = harmonyContent
	}
}

// headerWord returns the word s begins with: up to a space or the next control token.
func headerWord(s string) string {
	end := len(s)
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		end = i
	}
	if i := strings.Index(s[:end], "<|"); i >= 0 {
		end = i
	}
	return s[:end]
}

// body passes on text of the current message.
func (p *HarmonyParser) body(ev []Event, s string) []Event {
	switch p.kind {
	case harmonyCall:
		p.block.WriteString(s)
		p.cuts = append(p.cuts, p.block.Len())
		return ev
	case harmonyReasoning:
		return addReasoning(ev, s)
	}
	return addText(ev, s)
}

// closeMessage ends the current message: a call is reported if its text is a JSON object, and
// comes back as content otherwise.
func (p *HarmonyParser) closeMessage(ev []Event) []Event {
	if p.kind != harmonyCall {
		return ev
	}
	text := p.block.String()
	args, lead := trimSpace(text)
	switch {
	case args == "":
		args = "{}"
		ev = append(ev, Event{Call: &Call{Name: p.name, Arguments: args, Pieces: []string{args}}})
		p.calls++
	case args[0] == '{' && json.Valid([]byte(args)):
		ev = append(ev, Event{Call: &Call{Name: p.name, Arguments: args, Pieces: split(args, lead, p.cuts)}})
		p.calls++
	default:
		ev = addText(ev, text)
	}
	p.block.Reset()
	p.cuts = p.cuts[:0]
	return ev
}

// firstEnd returns where the first message terminator in s begins and its length (-1, 0: none).
func firstEnd(s string) (int, int) {
	at, n := -1, 0
	for _, e := range harmonyEnds {
		if i := strings.Index(s, e); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(e)
		}
	}
	return at, n
}

// partialEnd returns the length of the longest tail of s that is a proper prefix of a message
// terminator.
func partialEnd(s string) int {
	keep := 0
	for _, e := range harmonyEnds {
		for k := min(len(e)-1, len(s)); k > keep; k-- {
			if strings.HasSuffix(s, e[:k]) {
				keep = k
				break
			}
		}
	}
	return keep
}

// addReasoning appends reasoning text, joining it to a reasoning event just before.
func addReasoning(ev []Event, s string) []Event {
	if s == "" {
		return ev
	}
	if n := len(ev); n > 0 && ev[n-1].Call == nil && ev[n-1].Text == "" && ev[n-1].Reasoning != "" {
		ev[n-1].Reasoning += s
		return ev
	}
	return append(ev, Event{Reasoning: s})
}
