package interop_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/readme"
)

// The troubleshooting table in docs/troubleshooting.md quotes what each client prints
// when a VAST rule refuses it. The tests below and the client tests that
// provoke those refusals compare each quote with the client's real text
// (checkQuoted); TestMain then fails the run if a client's tests ran but
// left one of its quotes unchecked.

var troubleshooting = sync.OnceValues(func() ([]readme.Row, error) {
	data, err := os.ReadFile("../" + readme.TroubleshootingPage)
	if err != nil {
		return nil, err
	}
	return readme.Troubleshooting(string(data))
})

// checked holds "client\x00quote" for every quote a test compared.
var checked = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// checkQuoted checks that every text the troubleshooting row for rule
// quotes for client appears in one of got, what the client printed.
func checkQuoted(t *testing.T, client, rule string, got ...string) {
	t.Helper()
	rows, err := troubleshooting()
	if err != nil {
		t.Fatal(err)
	}
	row, ok := readme.RowFor(rows, rule)
	if !ok {
		t.Fatalf("the troubleshooting table has no row for %s", rule)
	}
	quotes := row.Texts[client]
	if len(quotes) == 0 {
		t.Errorf("the troubleshooting %s row quotes nothing for %s, which printed %q", rule, client, got)
	}
	checked.Lock()
	defer checked.Unlock()
	for _, q := range quotes {
		if slices.ContainsFunc(got, func(g string) bool { return readme.Matches(q, g) }) {
			checked.m[client+"\x00"+q] = true
			continue
		}
		t.Errorf("troubleshooting quotes %s as %q for %s; it printed %q", client, q, rule, got)
	}
}

// TestMain runs the tests, then, when they all ran and passed, checks that
// every quote of every client whose tests ran was compared with its text.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 || flag.Lookup("test.run").Value.String() != "" {
		os.Exit(code)
	}
	rows, err := troubleshooting()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	checked.Lock()
	ran := map[string]bool{}
	for k := range checked.m {
		ran[strings.SplitN(k, "\x00", 2)[0]] = true
	}
	var missing []string
	for _, row := range rows {
		for client, quotes := range row.Texts {
			for _, q := range quotes {
				if ran[client] && client != "kgo" && !checked.m[client+"\x00"+q] {
					missing = append(missing, fmt.Sprintf("%s for %v: %q", client, row.Rules, q))
				}
			}
		}
	}
	checked.Unlock()
	if len(missing) > 0 {
		sort.Strings(missing)
		fmt.Fprintf(os.Stderr, "the troubleshooting table quotes texts no test compared with the client's:\n  %s\n", strings.Join(missing, "\n  "))
		os.Exit(1)
	}
	os.Exit(code)
}

// kafkajsError turns a matrix.js line's "Name TYPE: message" into what
// kafkajs's errors print, "Name: message".
var kafkajsError = regexp.MustCompile(`(KafkaJS\w+) [A-Z_]+: `)

// checkKafkaJSQuotes compares the troubleshooting kafkajs quotes with what matrix.js
// printed against the VAST profile.
func checkKafkaJSQuotes(t *testing.T, out string) {
	t.Helper()
	var texts []string
	for _, line := range strings.Split(out, "\n") {
		if _, text, ok := strings.Cut(line, ": "); ok {
			texts = append(texts, kafkajsError.ReplaceAllString(text, "$1: "), text)
		}
	}
	rows, err := troubleshooting()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if len(row.Texts["kafkajs"]) > 0 {
			checkQuoted(t, "kafkajs", row.Rules[0], texts...)
		}
	}
}

// TestTroubleshootingKafkaPython runs kafka-python (Debian's python3-kafka)
// into the VAST profile's refusals and compares its texts with the troubleshooting table's.
func TestTroubleshootingKafkaPython(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command(pythonWithConfluent, "-c", "import kafka").CombinedOutput(); err != nil {
		msg := "TestTroubleshootingKafkaPython needs " + pythonWithConfluent + " with kafka-python (apt-get install -y python3-kafka): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pythonWithConfluent, "troubleshooting/kafka_python.py", b.Addr())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka_python.py: %v\n%s", err, walkthroughTail(stderr.String(), 20))
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		rule, text, _ := strings.Cut(line, "\t")
		got[rule] = append(got[rule], text)
	}
	for _, rule := range []string{"NoCompression", "MaxValueBytes", "VASTTopicConfigsOnly"} {
		checkQuoted(t, "kafka-python", rule, got[rule]...)
	}
}
