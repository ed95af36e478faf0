package main

import (
	"bufio"
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

// runChat is the interactive mode: read a message, answer it, keep the conversation. The
// session keeps the keys and values of everything said, and each turn's prompt (the whole
// conversation through the template) starts with those tokens, so only the new ones are
// computed. An optional PROMPT argument is the first message.
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

	in, out, errw := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := g.rawIfNoTemplate(tok, errw); err != nil {
		return err
	}
	tty := false
	if f, ok := in.(*os.File); ok {
		tty = cli.IsTerminal(f)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// Exiting from the signal goroutine: the model stays mapped (a generation may still be
	// reading it) until the process ends.
	intr := &interrupts{exit: func() {
		fmt.Fprintln(out)
		os.Exit(exitInterrupted)
	}}
	go intr.watch(sigs)

	if tty {
		fmt.Fprintf(errw, "anerun: chatting with %s (%s backend). Ctrl-C stops an answer; Ctrl-D or Ctrl-C at the prompt exits; /reset forgets the conversation.\n", args[0], l.backend.Name())
	}
	var msgs []chatMessage
	if g.system != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: g.system})
	}
	system := len(msgs)
	var transcript strings.Builder // --raw: the conversation is one growing text
	reader := bufio.NewReader(in)
	turns := 0
	first := ""
	if len(args) > 1 {
		first = args[1]
	}
	for {
		text := first
		if first == "" {
			if tty {
				fmt.Fprint(out, "> ")
			}
			line, err := reader.ReadString('\n')
			if err == io.EOF && line == "" {
				if tty {
					fmt.Fprintln(out)
				}
				return nil
			}
			if err != nil && err != io.EOF {
				return fmt.Errorf("reading stdin: %w", err)
			}
			text = strings.TrimRight(line, "\r\n")
		}
		first = ""
		switch strings.TrimSpace(text) {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			msgs = msgs[:system]
			transcript.Reset()
			sess.Reset()
			continue
		}
		var prompt []int
		if g.raw {
			transcript.WriteString(text)
			prompt = encodeRaw(tok, transcript.String())
		} else {
			msgs = append(msgs, chatMessage{Role: "user", Content: text})
			if prompt, err = encodeChat(tok, msgs); err != nil {
				return err
			}
		}
		ctx, done := intr.generating()
		turn := opts
		turn.OnText = func(s string) error {
			_, err := io.WriteString(out, s)
			return err
		}
		res, err := sess.Generate(ctx, prompt, turn)
		done()
		fmt.Fprintln(out)
		var ce *runtime.ContextError
		if errors.As(err, &ce) {
			// The conversation outgrew the context: say so, forget the message, keep chatting.
			fmt.Fprintf(errw, "anerun: %v; /reset starts a new conversation\n", err)
			if g.raw {
				t := transcript.String()
				transcript.Reset()
				transcript.WriteString(t[:len(t)-len(text)])
			} else {
				msgs = msgs[:len(msgs)-1]
			}
			continue
		}
		if err != nil && (res == nil || res.Reason != runtime.StopCancelled) {
			return err
		}
		if g.raw {
			transcript.WriteString(res.Text)
		} else {
			msgs = append(msgs, chatMessage{Role: "assistant", Content: res.Text})
		}
		if g.verbose {
			printStats(errw, prompt, res, l, turns == 0)
		}
		turns++
	}
}
