// Package readme reads the parts of the user docs that tests keep true:
// the troubleshooting table's client error texts (docs/troubleshooting.md),
// which tests in this module and in the interop module compare with what
// each client really prints.
package readme

import (
	"fmt"
	"regexp"
	"strings"
)

// TroubleshootingPage is the page with the troubleshooting table, relative
// to the module root.
const TroubleshootingPage = "docs/troubleshooting.md"

// Row is one row of the troubleshooting table.
type Row struct {
	// Rules are the rule names quoted in the row's rule column.
	Rules []string
	// Texts maps a client label (librdkafka, kgo, sarama, kafka-python,
	// kafkajs) to the error texts the row quotes for that client.
	Texts map[string][]string
}

// clientLabel matches the start of a client's part of a cell: its name and
// what qualifies it (a version, the call that fails), up to the first colon
// outside backquotes.
var clientLabel = regexp.MustCompile("(librdkafka|kgo|sarama|kafka-python|kafkajs)([^:`;]|`[^`]*`){0,100}?:")

var quoted = regexp.MustCompile("`([^`]+)`")

// Troubleshooting returns the rows of the table headed "| the client says |"
// in page, or an error when the table is missing.
func Troubleshooting(page string) ([]Row, error) {
	start := strings.Index(page, "| the client says |")
	if start < 0 {
		return nil, fmt.Errorf("%s has no troubleshooting table", TroubleshootingPage)
	}
	var rows []Row
	for _, line := range strings.Split(page[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 3 {
			return nil, fmt.Errorf("troubleshooting row with %d cells: %s", len(cells), line)
		}
		row := Row{Texts: map[string][]string{}}
		for _, m := range quoted.FindAllStringSubmatch(cells[1], -1) {
			row.Rules = append(row.Rules, m[1])
		}
		says := strings.TrimPrefix(cells[0], "| ")
		labels := clientLabel.FindAllStringSubmatchIndex(says, -1)
		for i, l := range labels {
			end := len(says)
			if i+1 < len(labels) {
				end = labels[i+1][0]
			}
			client := says[l[2]:l[3]]
			for _, m := range quoted.FindAllStringSubmatch(says[l[1]:end], -1) {
				row.Texts[client] = append(row.Texts[client], m[1])
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// RowFor returns the row whose rule column names rule.
func RowFor(rows []Row, rule string) (Row, bool) {
	for _, r := range rows {
		for _, name := range r.Rules {
			if name == rule {
				return r, true
			}
		}
	}
	return Row{}, false
}

// Matches reports whether quote, a text the table quotes, appears in got, a
// text a client printed. An ellipsis (…) in quote stands for any text.
func Matches(quote, got string) bool {
	for _, part := range strings.Split(quote, "…") {
		part = strings.TrimSpace(part)
		i := strings.Index(got, part)
		if i < 0 {
			return false
		}
		got = got[i+len(part):]
	}
	return true
}
