package main

// The values a setting takes, and their bounds. Every flag of the binary is
// a *value or a *listFlag whose Set never fails: what a source gives is kept
// as text, with the source it came from, and checked once every source is
// read. So an error names the flag, its environment variable, the source and
// what is wanted, and quotes no more than a short prefix of the value.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vastfake/vastfake/broker"
)

const (
	// maxValueBytes bounds a single value and one item of a repeatable
	// flag: a Linux path (PATH_MAX) is at most as long.
	maxValueBytes = 4096
	// maxFileBytes bounds each file the binary reads at start: the config
	// file and the TLS certificate and key.
	maxFileBytes = 1 << 20
	// minInterval is the shortest duration a setting other than 0 takes:
	// Kafka counts every one of them in milliseconds, so 1ms is its
	// minimum, and a shorter retention or compaction interval would keep
	// an idle broker busy.
	minInterval = time.Millisecond
	// maxQuoted is how much of a value an error line quotes.
	maxQuoted = 128
	// maxInt32 bounds the integers Kafka keeps as INT configs.
	maxInt32 = math.MaxInt32
)

// kind is the type of value a single-valued setting takes.
type kind int

const (
	kindText     kind = iota // a string of at most maxValueBytes
	kindInt                  // a whole number from min to max
	kindDuration             // a Go duration: 0 where zeroOK, else minInterval or more
	kindBool                 // true or false
	kindAddress              // host:port, the port from min to max
	kindFile                 // the path of a file read at start, at most maxFileBytes
)

// kindWords name each kind's value in the usage.
var kindWords = map[kind]string{kindText: "string", kindInt: "int", kindDuration: "duration", kindBool: "",
	kindAddress: "host:port", kindFile: "file"}

// value is a single-valued setting: its flag name, kind and bounds, and
// the text a source gave it (its default until one does), with where it
// came from.
type value struct {
	name     string
	kind     kind
	min, max int64 // kindInt: the bounds; kindAddress: the port's
	zeroOK   bool  // kindDuration: 0 means off, never or at once
	maxBytes int   // kindText: the longest text, maxValueBytes when 0
	text     string
	from     string // "" for the default, else a source (see sources)
}

func (v *value) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

// Set keeps s; check reads it.
func (v *value) Set(s string) error { v.text = s; return nil }

// IsBoolFlag lets a boolean flag stand alone on the command line.
func (v *value) IsBoolFlag() bool { return v != nil && v.kind == kindBool }

// The sources of a setting, as errors name them.
const (
	fromCommandLine = "the command line"
	fromDefault     = "the default"
)

func fromEnv(name string) string  { return name }
func fromFile(path string) string { return "config file " + clip(path) }
func (v *value) source() string {
	if v.from == "" {
		return fromDefault
	}
	return v.from
}

// settingError is a start error about one value of a setting.
type settingError struct{ msg string }

func (e *settingError) Error() string { return e.msg }

// wrong returns the error for text, a value of flag name from source, that
// is not what the flag wants: "-brokers (VASTFAKE_BROKERS): "abc" from the
// command line: want a whole number from 1 to 16".
func wrong(name, text, source, want string) error {
	return &settingError{fmt.Sprintf("%s: %s from %s: want %s", flagAndEnv(name), clip(text), source, want)}
}

// flagAndEnv names a flag and the environment variable(s) that set it.
func flagAndEnv(name string) string {
	if l, ok := listNames[name]; ok {
		return fmt.Sprintf("-%s (%s or %s)", name, l[0], l[1])
	}
	return fmt.Sprintf("-%s (%s)", name, envName(name))
}

// clip quotes s, or its first maxQuoted bytes (ending on a character
// boundary) and its length when it is longer.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("… (%d bytes)", len(s))
}

func (v *value) wrong(want string) error { return wrong(v.name, v.text, v.source(), want) }

// checkText returns the text of a kindText value.
func (v *value) checkText() (string, error) {
	limit := v.maxBytes
	if limit == 0 {
		limit = maxValueBytes
	}
	if len(v.text) > limit {
		return "", v.wrong(fmt.Sprintf("at most %d bytes", limit))
	}
	return v.text, nil
}

// checkInt returns the number of a kindInt value, within its bounds.
func (v *value) checkInt() (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v.text), 10, 64)
	if err != nil || n < v.min || n > v.max {
		return 0, v.wrong(fmt.Sprintf("a whole number from %d to %d", v.min, v.max))
	}
	return n, nil
}

// checkDuration returns the duration of a kindDuration value, 0 when it
// is unset.
func (v *value) checkDuration() (time.Duration, error) {
	if v.text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.text))
	switch {
	case err == nil && d == 0 && v.zeroOK, err == nil && d >= minInterval:
		return d, nil
	case v.zeroOK:
		return 0, v.wrong("0 or a duration of 1ms or more, such as 3s")
	}
	return 0, v.wrong("a duration of 1ms or more, such as 3s")
}

// checkBool returns the truth of a kindBool value.
func (v *value) checkBool() (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v.text))
	if err != nil {
		return false, v.wrong("true or false")
	}
	return b, nil
}

// checkAddress returns a kindAddress value, "" when it is unset.
func (v *value) checkAddress() (string, error) {
	if v.text == "" {
		return "", nil
	}
	if err := checkHostPort(v.text, int(v.min), int(v.max), false); err != nil {
		return "", v.wrong(err.Error())
	}
	return v.text, nil
}

// checkHostPort checks a host:port whose port is from minPort to maxPort
// and whose host, which may be empty unless needHost, is a name or an IP
// address of at most broker.MaxAdvertisedHost bytes; the error says what
// is wanted.
func checkHostPort(a string, minPort, maxPort int, needHost bool) error {
	want := fmt.Errorf("host:port with a port from %d to %d", minPort, maxPort)
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return want
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < minPort || port > maxPort || needHost && h == "" {
		return want
	}
	if len(h) > broker.MaxAdvertisedHost || strings.ContainsFunc(h, func(r rune) bool { return r <= ' ' || r > '~' || r == '/' }) {
		return fmt.Errorf("host:port with a host name or IP address of at most %d bytes", broker.MaxAdvertisedHost)
	}
	return nil
}

// readBounded reads the file at path, which must hold at most maxFileBytes:
// a larger file (or a device such as /dev/zero) is an error, read no
// further.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, errors.New("more than 1 MiB")
	}
	return data, nil
}

// checkFile returns the contents of the file a kindFile value names.
func (v *value) checkFile() ([]byte, error) {
	if len(v.text) > maxValueBytes {
		return nil, v.wrong(fmt.Sprintf("a path of at most %d bytes", maxValueBytes))
	}
	data, err := readBounded(v.text)
	if err != nil {
		return nil, v.wrong("a readable file of at most 1 MiB (" + shortError(err) + ")")
	}
	return data, nil
}

// shortError is err's message with the path os errors repeat left out.
func shortError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// item is one element of a repeatable flag and the source that gave it.
type item struct{ text, from string }

// listFlag is a repeatable flag whose values come from the environment,
// the config file and the command line, kept apart so that they apply in
// that order whatever order they were read in.
type listFlag struct {
	name           string
	env, file, cmd []item
	split          func(string) []string
}

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	var texts []string
	for _, it := range l.all() {
		texts = append(texts, it.text)
	}
	return strings.Join(texts, " ")
}

func (l *listFlag) Set(v string) error {
	l.cmd = append(l.cmd, l.items(v, fromCommandLine)...)
	return nil
}

// items splits v, from source, into items.
func (l *listFlag) items(v, source string) []item {
	var out []item
	for _, s := range l.split(v) {
		out = append(out, item{s, source})
	}
	return out
}

// all returns every item, environment first, then the config file, then
// the command line; an item longer than maxValueBytes is an error of its
// own (see check).
func (l *listFlag) all() []item {
	return append(append(append([]item{}, l.env...), l.file...), l.cmd...)
}

// check returns every item, or an error for the first longer than
// maxValueBytes.
func (l *listFlag) check() ([]item, error) {
	items := l.all()
	for _, it := range items {
		if len(it.text) > maxValueBytes {
			return nil, wrong(l.name, it.text, it.from, fmt.Sprintf("items of at most %d bytes", maxValueBytes))
		}
	}
	return items, nil
}

// listNames gives each repeatable flag its environment variables: the
// plural the help names, and the singular, which is read too.
var listNames = map[string][2]string{
	"topic":      {"VASTFAKE_TOPICS", "VASTFAKE_TOPIC"},
	"rule":       {"VASTFAKE_RULES", "VASTFAKE_RULE"},
	"user":       {"VASTFAKE_USERS", "VASTFAKE_USER"},
	"policy":     {"VASTFAKE_POLICIES", "VASTFAKE_POLICY"},
	"offset-gap": {"VASTFAKE_OFFSET_GAPS", "VASTFAKE_OFFSET_GAP"},
}

// printUsage prints every flag of fs with its kind of value, help and
// default, as flag.PrintDefaults would with the kinds of value this binary's
// flags take.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		word := "value"
		switch v := f.Value.(type) {
		case *value:
			word = kindWords[v.kind]
		case *listFlag:
			word = "spec"
		}
		line := "  -" + f.Name
		if word != "" {
			line += " " + word
		}
		def := f.DefValue
		if v, ok := f.Value.(*value); ok && v.kind == kindBool && def == "false" {
			def = ""
		}
		help := f.Usage
		if def != "" {
			help += fmt.Sprintf(" (default %q)", def)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(help, "\n", "\n    \t"))
	})
}

// clipWriter writes to w, cutting every line longer than maxLine bytes:
// the flag package's own errors quote a whole argument.
type clipWriter struct {
	w       io.Writer
	maxLine int
	n       int // bytes of the current line written so far
}

func (c *clipWriter) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		seg := p
		i := bytes.IndexByte(p, '\n')
		if i >= 0 {
			seg = p[:i]
		}
		if room := c.maxLine - c.n; room > 0 {
			if _, err := c.w.Write(seg[:min(len(seg), room)]); err != nil {
				return 0, err
			}
		}
		if c.n <= c.maxLine && c.n+len(seg) > c.maxLine {
			io.WriteString(c.w, "…")
		}
		c.n += len(seg)
		if i < 0 {
			break
		}
		io.WriteString(c.w, "\n")
		c.n = 0
		p = p[i+1:]
	}
	return written, nil
}
