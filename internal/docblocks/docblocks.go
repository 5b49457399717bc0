// Package docblocks reads the fenced code blocks of a Markdown page, with
// the check each one asks for, so that a test can run the pages' examples
// as written (see docblocks_test.go).
package docblocks

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// A Block is one fenced code block of a page.
type Block struct {
	File  string // the page
	Line  int    // the line of its opening fence
	Lang  string // the fence's info string: sh, go, js, console, ...
	Text  string // its contents, with a final newline
	Check string // the check a comment just above it names (<!-- check: serves -->), or ""
	Args  map[string]string
}

func (b Block) String() string { return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Lang) }

var checkRe = regexp.MustCompile(`^<!-- check: ([a-z0-9.-]+)((?: [a-z]+=\S+)*) -->$`)

// Parse returns the fenced code blocks of the Markdown page at file.
func Parse(file string) ([]Block, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		fence, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		b := Block{File: file, Line: i + 1, Lang: strings.TrimSpace(fence), Args: map[string]string{}}
		if i > 0 {
			if m := checkRe.FindStringSubmatch(lines[i-1]); m != nil {
				b.Check = m[1]
				for _, kv := range strings.Fields(m[2]) {
					k, v, _ := strings.Cut(kv, "=")
					b.Args[k] = v
				}
			} else if strings.HasPrefix(lines[i-1], "<!-- check") {
				return nil, fmt.Errorf("%s:%d: %q is not <!-- check: name [key=value ...] -->", file, i, lines[i-1])
			}
		}
		var text strings.Builder
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			text.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block never closes", file, b.Line)
		}
		b.Text = text.String()
		blocks = append(blocks, b)
	}
	return blocks, nil
}
