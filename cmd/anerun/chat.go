package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/tokenizer"
)

// interrupts turns Ctrl-C into "stop the current answer" while one is being generated and into
// "exit" otherwise (at the prompt, or a second Ctrl-C before the answer has stopped).
type interrupts struct {
	mu     sync.Mutex
	cancel context.CancelFunc // set while generating; nil otherwise
	exit   func()
}

func (in *interrupts) watch(ch <-chan os.Signal) {
	for range ch {
		in.mu.Lock()
		cancel := in.cancel
		in.cancel = nil
		in.mu.Unlock()
		if cancel == nil {
			in.exit()
			return
		}
		cancel()
	}
}

// generating returns a context that the next Ctrl-C cancels.
func (in *interrupts) generating() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	in.mu.Lock()
	in.cancel = cancel
	in.mu.Unlock()
	return ctx, func() {
		in.mu.Lock()
		in.cancel = nil
		in.mu.Unlock()
		cancel()
	}
}

// chat is one interactive conversation.
type chat struct {
	g    *genFlags
	l    *loaded
	tok  *tokenizer.Tokenizer
	sess *runtime.Session
	opts runtime.GenerateOptions
	// msgs is the conversation through the chat template; its first system messages (0 or 1)
	// stay when the conversation is cleared.
	msgs   []chatMessage
	system int
	// transcript is the conversation as one growing text, with --raw.
	transcript strings.Builder
	out, errw  io.Writer
	turns      int
}

// runChat is the interactive mode: read a message, answer it, keep the conversation. The
// session keeps the keys and values of everything said, and each turn's prompt (the whole
// conversation through the template) starts with those tokens, so only the new ones are
// computed. An optional PROMPT argument is the first message. On a terminal, lines are edited
// with peterh/liner and kept in a history across runs; """ opens a message of several lines;
// lines starting with / are commands (chatcmd.go).
func runChat(cmd *cobra.Command, args []string, g *genFlags) error {
	l, err := load(args[0], &g.model)
	if err != nil {
		return err
	}
	defer l.Close()
	opts, err := g.generateOptions(l.model)
	if err != nil {
		return err
	}
	tok, err := l.model.Tokenizer()
	if err != nil {
		return err
	}
	sess, err := runtime.NewSession(l.model, l.backend, g.model.ctx)
	if err != nil {
		return err
	}
	defer sess.Close()

	c := &chat{g: g, l: l, tok: tok, sess: sess, opts: opts, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
	if err := g.rawIfNoTemplate(tok, c.errw); err != nil {
		return err
	}
	in := newLineReader(cmd.InOrStdin(), c.out, historyPath(), c.errw)
	defer in.Close()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// Exiting from the signal goroutine: the model stays mapped (a generation may still be
	// reading it) until the process ends; the terminal gets its mode back first.
	intr := &interrupts{exit: func() {
		in.Close()
		fmt.Fprintln(c.out)
		os.Exit(exitInterrupted)
	}}
	go intr.watch(sigs)

	if _, ok := in.(*editor); ok {
		fmt.Fprintf(c.errw, "anerun: chatting with %s (%s backend). /help lists the commands; \"\"\" starts a message of several lines; Ctrl-C stops an answer; Ctrl-D or /bye exits.\n", args[0], l.backend.Name())
	}
	if g.system != "" {
		c.msgs = append(c.msgs, chatMessage{Role: "system", Content: g.system})
		c.system = 1
	}
	if len(args) > 1 {
		if err := c.turn(intr, args[1]); err != nil {
			return err
		}
	}
	for {
		text, block, err := readMessage(in)
		switch {
		case errors.Is(err, io.EOF):
			if _, ok := in.(*editor); ok {
				fmt.Fprintln(c.out)
			}
			return nil
		case errors.Is(err, errAborted):
			return &cli.ExitError{Code: exitInterrupted} // Ctrl-C at the prompt
		case errors.Is(err, errBlockDiscarded):
			fmt.Fprintln(c.errw, "anerun: "+err.Error())
			continue
		case err != nil:
			return err
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !block && strings.HasPrefix(strings.TrimSpace(text), "/") {
			if c.command(text) {
				return nil
			}
			continue
		}
		if err := c.turn(intr, text); err != nil {
			return err
		}
	}
}

// clear starts a new conversation, keeping the system message.
func (c *chat) clear() {
	c.msgs = c.msgs[:c.system]
	c.transcript.Reset()
	c.sess.Reset()
}

// turn answers one message and adds both to the conversation. A message that no longer fits
// the context is refused with advice (the conversation is kept as it was).
func (c *chat) turn(intr *interrupts, text string) error {
	var prompt []int
	var err error
	if c.g.raw {
		c.transcript.WriteString(text)
		prompt = encodeRaw(c.tok, c.transcript.String())
	} else {
		c.msgs = append(c.msgs, chatMessage{Role: "user", Content: text})
		if prompt, err = encodeChat(c.tok, c.msgs); err != nil {
			return err
		}
	}
	ctx, done := intr.generating()
	turn := c.opts
	turn.OnText = func(s string) error {
		_, err := io.WriteString(c.out, s)
		return err
	}
	res, err := c.sess.Generate(ctx, prompt, turn)
	done()
	fmt.Fprintln(c.out)
	var ce *runtime.ContextError
	if errors.As(err, &ce) {
		// The conversation outgrew the context: say so, forget the message, keep chatting.
		fmt.Fprintf(c.errw, "anerun: %v; /clear starts a new conversation\n", err)
		if c.g.raw {
			t := c.transcript.String()
			c.transcript.Reset()
			c.transcript.WriteString(t[:len(t)-len(text)])
		} else {
			c.msgs = c.msgs[:len(c.msgs)-1]
		}
		return nil
	}
	if err != nil && (res == nil || res.Reason != runtime.StopCancelled) {
		return err
	}
	if c.g.raw {
		c.transcript.WriteString(res.Text)
	} else {
		c.msgs = append(c.msgs, chatMessage{Role: "assistant", Content: res.Text})
	}
	if c.g.verbose {
		printStats(c.errw, prompt, res, c.l, c.turns == 0)
	}
	c.turns++
	return nil
}
