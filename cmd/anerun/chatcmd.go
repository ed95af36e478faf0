package main

import (
	"fmt"
	"strconv"
	"strings"
)

// chatHelp is what /help prints.
const chatHelp = `Commands:
  /set system TEXT      use TEXT as the system message from the next answer on (no TEXT: none)
  /set temperature T    sample at temperature T (0: greedy) from the next answer on
  /set top-k K          keep only the K most likely tokens (0: all)
  /set top-p P          keep the most likely tokens up to probability mass P
  /set max-tokens N     answer with at most N tokens (0: until an end token)
  /clear                start a new conversation (the system message stays)
  /help                 this list
  /bye                  exit (also /exit, /quit, or Ctrl-D)

Type """ to start a message of several lines and end it with """ (a line starting with / is
then text, not a command). Ctrl-C stops an answer; at the prompt it exits. Arrow keys, Ctrl-A,
Ctrl-E, Ctrl-L and Ctrl-R edit the line and search the history, which is kept across runs.`

// command runs one slash command line; it returns true for /bye. Unknown commands are an
// error on stderr and nothing is sent to the model.
func (c *chat) command(line string) (exit bool) {
	name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch name {
	case "/bye", "/exit", "/quit":
		return true
	case "/help", "/?":
		fmt.Fprintln(c.errw, chatHelp)
	case "/clear", "/reset":
		c.clear()
		fmt.Fprintln(c.errw, "anerun: new conversation")
	case "/set":
		if err := c.set(rest); err != nil {
			fmt.Fprintf(c.errw, "anerun: /set: %v\n", err)
		}
	default:
		fmt.Fprintf(c.errw, "anerun: unknown command %s; /help lists the commands (to send text that starts with /, put it in a \"\"\" block)\n", name)
	}
	return false
}

// set runs "/set NAME VALUE".
func (c *chat) set(arg string) error {
	name, value, _ := strings.Cut(arg, " ")
	value = strings.TrimSpace(value)
	switch name {
	case "system":
		return c.setSystem(unquote(value))
	case "temperature", "temp":
		t, err := strconv.ParseFloat(value, 64)
		if err != nil || t < 0 {
			return fmt.Errorf("temperature %q: expected a number, 0 or more (0 is greedy)", value)
		}
		s := c.opts.Sampling
		s.Temperature = t
		if err := s.Check(); err != nil {
			return err
		}
		c.opts.Sampling = s
		fmt.Fprintf(c.errw, "anerun: temperature %g\n", t)
	case "top-k", "top_k":
		k, err := strconv.Atoi(value)
		if err != nil || k < 0 {
			return fmt.Errorf("top-k %q: expected a whole number, 0 or more (0 keeps every token)", value)
		}
		c.opts.Sampling.TopK = k
		fmt.Fprintf(c.errw, "anerun: top-k %d\n", k)
	case "top-p", "top_p":
		p, err := strconv.ParseFloat(value, 64)
		s := c.opts.Sampling
		s.TopP = p
		if err != nil || s.Check() != nil {
			return fmt.Errorf("top-p %q: expected a number above 0, at most 1", value)
		}
		c.opts.Sampling = s
		fmt.Fprintf(c.errw, "anerun: top-p %g\n", p)
	case "max-tokens", "max_tokens", "n-predict":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("max-tokens %q: expected a whole number, 0 or more (0: until an end token)", value)
		}
		c.opts.MaxTokens = n
		fmt.Fprintf(c.errw, "anerun: max-tokens %d\n", n)
	case "":
		return fmt.Errorf("expected a setting: system, temperature, top-k, top-p or max-tokens (/help)")
	default:
		return fmt.Errorf("unknown setting %q; expected system, temperature, top-k, top-p or max-tokens (/help)", name)
	}
	return nil
}

// setSystem replaces the system message (an empty text removes it); the conversation is kept.
func (c *chat) setSystem(text string) error {
	if c.g.raw {
		return fmt.Errorf("system: this chat continues plain text (--raw, or a model without a chat template), which has no system message")
	}
	if c.system > 0 {
		c.msgs = c.msgs[1:]
	}
	c.system = 0
	if text != "" {
		c.msgs = append([]chatMessage{{Role: "system", Content: text}}, c.msgs...)
		c.system = 1
		fmt.Fprintln(c.errw, "anerun: system message set")
	} else {
		fmt.Fprintln(c.errw, "anerun: no system message")
	}
	return nil
}

// unquote drops one pair of matching quotes around s, as people write /set system "…".
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
