package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/tokenizer"
)

func newTokenizeCmd() *cobra.Command {
	var decode, addSpecial, splitSpecial, skipSpecial bool
	cmd := &cobra.Command{
		Use:   "tokenize MODEL [TEXT]",
		Short: "Show the token ids of a text (or, with --decode, the text of ids)",
		Long: `tokenize prints the ids the model's tokenizer gives TEXT, as a JSON array, exactly as
transformers' tokenizer.encode(TEXT, add_special_tokens=False) (--add-special: True).
With --decode, TEXT is a list of ids ("9707,11,1879" or "[9707, 11, 1879]") and the text is printed.

Without TEXT, it reads JSON values from stdin, one per line: {"text": "..."} lines become
{"ids": [...]} lines (with --decode, {"ids": [...]} lines become {"text": "..."} lines).`,
		Example: `  anerun tokenize qwen.aneb "Hello, world"
  anerun tokenize qwen.aneb --decode 9707,11,1879
  echo '{"text": "Hello"}' | anerun tokenize qwen.aneb`,
		Args: cli.Args(1, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, closeModel, err := openTokenizer(args[0])
			if err != nil {
				return err
			}
			defer closeModel()
			encOpts := tokenizer.EncodeOptions{AddSpecialTokens: addSpecial, SplitSpecialTokens: splitSpecial}
			decOpts := tokenizer.DecodeOptions{SkipSpecialTokens: skipSpecial}
			out := cmd.OutOrStdout()
			if len(args) == 2 {
				if decode {
					ids, err := parseIDs(args[1])
					if err != nil {
						return err
					}
					if err := checkIDs(ids, tok.VocabSize()); err != nil {
						return err
					}
					_, err = fmt.Fprintln(out, tok.DecodeWith(ids, decOpts))
					return err
				}
				_, err := fmt.Fprintln(out, formatIDs(tok.EncodeWithSpecials(args[1], encOpts)))
				return err
			}
			return tokenizeLines(cmd.InOrStdin(), out, func(in map[string]json.RawMessage) (any, error) {
				if decode {
					var ids []int
					if err := json.Unmarshal(in["ids"], &ids); err != nil || in["ids"] == nil {
						return nil, errors.New(`expected {"ids": [integers]}`)
					}
					if err := checkIDs(ids, tok.VocabSize()); err != nil {
						return nil, err
					}
					return map[string]string{"text": tok.DecodeWith(ids, decOpts)}, nil
				}
				var text string
				if err := json.Unmarshal(in["text"], &text); err != nil || in["text"] == nil {
					return nil, errors.New(`expected {"text": "a string"}`)
				}
				ids := tok.EncodeWithSpecials(text, encOpts)
				if ids == nil {
					ids = []int{}
				}
				return map[string][]int{"ids": ids}, nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&decode, "decode", false, "turn ids into text")
	f.BoolVar(&addSpecial, "add-special", false, "add the tokenizer's BOS/EOS as add_special_tokens=True")
	f.BoolVar(&splitSpecial, "split-special", false, "treat special tokens written in the text as plain text")
	f.BoolVar(&skipSpecial, "skip-special", false, "with --decode, drop special tokens")
	return cmd
}

// openTokenizer opens the bundle MODEL names (see resolve) and its tokenizer; no backend is
// needed.
func openTokenizer(arg string) (*tokenizer.Tokenizer, func(), error) {
	path, err := (&modelFlags{}).resolve(arg)
	if err != nil {
		return nil, nil, err
	}
	m, err := runtime.Open(path)
	if err != nil {
		return nil, nil, err
	}
	tok, err := m.Tokenizer()
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return tok, func() { m.Close() }, nil
}

func checkIDs(ids []int, vocab int) error {
	for _, id := range ids {
		if id >= vocab {
			return fmt.Errorf("token id %d is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	return nil
}

func formatIDs(ids []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte(']')
	return b.String()
}

// tokenizeLines reads JSON objects from r and writes one JSON line per object to w. Errors name
// the line.
func tokenizeLines(r io.Reader, w io.Writer, do func(map[string]json.RawMessage) (any, error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			bw.Flush()
			return fmt.Errorf("stdin line %d: not a JSON object: %v", line, err)
		}
		v, err := do(in)
		if err != nil {
			bw.Flush()
			return fmt.Errorf("stdin line %d: %w", line, err)
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		bw.Flush()
		return fmt.Errorf("reading stdin: %w", err)
	}
	return bw.Flush()
}
