// Package doccheck finds the shell commands in the repository's Markdown
// documentation, so that a test can run every one of them and none rots.
//
// It exists beside the fixed packages because it belongs to none of them:
// it reads README.md and docs/, not SOAP, payments or HTTP.
//
// A fenced block's info string is its language, optionally followed by one
// attribute in braces that tells the test how to treat it:
//
//	```sh                                        run every command, each must exit 0
//	```sh {serve: http://localhost:8080/healthz} start the one command, wait for the URL, stop it later
//	```sh {no-run: needs docker}                 not run here; the reason is required
package doccheck

import (
	"bufio"
	"fmt"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	File string // as given to Blocks
	Line int    // 1-based line of the opening fence
	Lang string // first word of the info string ("" when none)
	// Attr and Value are the attribute in braces after the language:
	// "serve" / "no-run" and what follows the colon, trimmed.
	Attr, Value string
	Body        string
}

// Shell reports whether the block holds shell commands.
func (b Block) Shell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console", "zsh":
		return true
	}
	return false
}

// Where is "file:line" of the block's opening fence.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Parse returns the fenced code blocks (``` or ~~~) of a Markdown text;
// name is used in Block.File. An unclosed fence is an error: the rest of
// the file would silently be one block.
func Parse(name, text string) ([]Block, error) {
	var (
		blocks []Block
		cur    *Block
		fence  string
		body   strings.Builder
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if cur == nil {
			f := fenceOf(trimmed)
			if f == "" || indent > 3 {
				continue
			}
			lang, attr, value, err := parseInfo(strings.TrimSpace(trimmed[len(f):]))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			cur = &Block{File: name, Line: n, Lang: lang, Attr: attr, Value: value}
			fence = f
			body.Reset()
			continue
		}
		if indent <= 3 && strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
			cur.Body = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code fence never closed", name, cur.Line)
	}
	return blocks, nil
}

// fenceOf returns the opening fence of a line (three or more ` or ~), or "".
func fenceOf(s string) string {
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

// parseInfo splits "sh {no-run: needs docker}" into its parts.
func parseInfo(info string) (lang, attr, value string, err error) {
	lang, rest, _ := strings.Cut(info, " ")
	if strings.HasPrefix(lang, "{") { // "{serve: …}" without a language
		return "", "", "", fmt.Errorf("info string %q: the language comes first", info)
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return lang, "", "", nil
	}
	if !strings.HasPrefix(rest, "{") || !strings.HasSuffix(rest, "}") {
		return "", "", "", fmt.Errorf("info string %q: after the language only {attribute: value}", info)
	}
	attr, value, _ = strings.Cut(rest[1:len(rest)-1], ":")
	return lang, strings.TrimSpace(attr), strings.TrimSpace(value), nil
}

// Commands splits a shell block into its commands: backslash-continued lines
// joined, blank lines and comment lines dropped, a leading "$ " prompt
// removed. Trailing comments stay (the shell ignores them).
func Commands(body string) []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if cur.Len() == 0 {
			t = strings.TrimPrefix(t, "$ ")
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSpace(strings.TrimSuffix(t, `\`)))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(t)
		cmds = append(cmds, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		cmds = append(cmds, strings.TrimSpace(cur.String()))
	}
	return cmds
}
