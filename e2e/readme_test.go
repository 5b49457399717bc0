package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
	"github.com/vastfake/vastfake/internal/readme"
)

// TestReadmeFirstTests keeps the first tests the guides quote, one per
// language, the files CI compiles and runs (examples/gettingstarted with go
// test, examples/pytest with pytest, js/test with node --test), so that a
// newcomer copying one gets a passing test. Getting started quotes each
// whole; the front page quotes only the Go test's function, word for word,
// and none of the whole files, so that its first screen stays short.
func TestReadmeFirstTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, lang string }{
		{"examples/gettingstarted/billing_test.go", "go"},
		{"examples/pytest/test_billing.py", "python"},
		{"js/test/billing.test.js", "js"},
	} {
		assertQuotes(t, "docs/getting-started.md", tc.file, tc.lang)
		front, err := os.ReadFile(repo("README.md"))
		require.NoError(t, err)
		example, err := os.ReadFile(repo(tc.file))
		require.NoError(t, err)
		assert.NotContains(t, string(front), string(example), "README.md quotes %s whole: Getting started does", tc.file)
	}
	assertQuotesFrom(t, "README.md", "examples/gettingstarted/billing_test.go", "func TestBillingCommitsWhatItRead(", "go")
	assertQuotes(t, "docs/brokers.md", "examples/gettingstarted/failover_test.go", "go")
}

// assertQuotes checks that doc quotes file verbatim in a code block of lang.
func assertQuotes(t *testing.T, doc, file, lang string) {
	t.Helper()
	assertQuotesFrom(t, doc, file, "", lang)
}

// assertQuotesFrom checks that doc quotes file verbatim in a code block of
// lang, from the line that starts with from (the whole file when from is
// empty) to its end.
func assertQuotesFrom(t *testing.T, doc, file, from, lang string) {
	t.Helper()
	page, err := os.ReadFile(repo(doc))
	require.NoError(t, err)
	example, err := os.ReadFile(repo(file))
	require.NoError(t, err)
	quoted := string(example)
	if from != "" {
		i := strings.Index(quoted, "\n"+from)
		require.GreaterOrEqual(t, i, 0, "%s has no line starting %q", file, from)
		quoted = quoted[i+1:]
	}
	assert.True(t, strings.Contains(string(page), "```"+lang+"\n"+quoted+"```\n"),
		"%s must quote %s verbatim in a %s block (from %q)", doc, file, lang, from)
}

// TestFirstTestPassesAgainstARealCluster runs the getting-started test with
// KAFKA_BOOTSTRAP pointing at a broker standing in for a real VAST cluster:
// a test written for vastfake must pass there when the app is right, not
// end in a skip at a call that only vastfake could answer.
func TestFirstTestPassesAgainstARealCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs examples/gettingstarted with go test")
	}
	cluster := fixtures.StartBroker(t)
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestBillingCommitsWhatItRead$", "./examples/gettingstarted")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KAFKA_BOOTSTRAP="+cluster.Addr())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestBillingCommitsWhatItRead")
	assert.NotContains(t, string(out), "SKIP")
	apis := map[kmsg.Key]bool{}
	for _, r := range cluster.Requests() {
		apis[r.API] = true
	}
	assert.True(t, apis[kmsg.Produce] && apis[kmsg.OffsetCommit], "the test ran against the cluster it was pointed at: %v", apis)
}

// TestTroubleshootingFranzGo checks every franz-go text in the
// troubleshooting table of docs/troubleshooting.md against what kgo and kadm really print when the VAST
// profile refuses them, and that every row naming a rule with a franz-go
// story has one.
func TestTroubleshootingFranzGo(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(repo(readme.TroubleshootingPage))
	require.NoError(t, err)
	rows, err := readme.Troubleshooting(string(data))
	require.NoError(t, err)

	k := fixtures.Start(t, fixtures.Topic("orders", 1))
	// ctx is each scenario's own deadline, set as it starts (the scenarios
	// run one at a time): one slow scenario cannot use up the others'.
	var ctx context.Context
	// raw is a client with kgo's defaults but for the address and a short
	// metadata age, so the texts are the ones an app sees.
	raw := func(t *testing.T, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Addr()), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	errText := func(t *testing.T, err error) string {
		require.Error(t, err)
		return err.Error()
	}
	produce := func(cl *kgo.Client, topic string, value []byte) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr()
	}
	createTopic := func(t *testing.T, partitions int32, configs map[string]*string) []string {
		resp, _ := k.Admin().CreateTopic(ctx, partitions, 1, configs, "refused")
		return []string{errText(t, resp.Err), resp.ErrMessage}
	}
	segment := "1000"

	scenarios := map[string]func(t *testing.T) []string{
		"NoCompression": func(t *testing.T) []string {
			cl := raw(t, kgo.DisableIdempotentWrite()) // kgo's default codec, snappy
			require.NoError(t, produce(cl, "orders", []byte("tiny")), "a batch snappy cannot shrink goes uncompressed")
			return []string{errText(t, produce(cl, "orders", bytes.Repeat([]byte("compressible "), 200)))}
		},
		"NoIdempotence": func(t *testing.T) []string {
			require.NoError(t, produce(raw(t), "orders", []byte("x")), "kgo produces without idempotence by itself")
			tx := raw(t, kgo.TransactionalID("billing-tx"))
			return []string{errText(t, tx.BeginTransaction())}
		},
		"EagerAssignorsOnly": func(t *testing.T) []string {
			cl := raw(t, kgo.ConsumerGroup("cooperative"), kgo.ConsumeTopics("orders"))
			return []string{errText(t, cl.PollFetches(ctx).Err0())}
		},
		"MaxValueBytes": func(t *testing.T) []string {
			return []string{errText(t, produce(raw(t, kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression())), "orders", make([]byte, 130<<10)))}
		},
		"NoAutoCreateTopics": func(t *testing.T) []string {
			return []string{errText(t, produce(raw(t, kgo.DisableIdempotentWrite(), kgo.UnknownTopicRetries(1)), "missing", []byte("x")))}
		},
		"VASTTopicConfigsOnly": func(t *testing.T) []string {
			return createTopic(t, 1, map[string]*string{"segment.bytes": &segment})
		},
		"MaxPartitionsPerTopic": func(t *testing.T) []string {
			return createTopic(t, 20_001, nil)
		},
		"FixedPartitions": func(t *testing.T) []string {
			_, err := k.Admin().CreatePartitions(ctx, 1, "orders")
			return []string{errText(t, err)}
		},
		"NoOffsetDelete": func(t *testing.T) []string {
			_, err := k.Admin().DeleteOffsets(ctx, "billing", kadm.TopicsSet{"orders": {0: {}}})
			return []string{errText(t, err)}
		},
		"NoShareGroups": func(t *testing.T) []string {
			_, err := k.Admin().DescribeShareGroups(ctx, "billing")
			cl := raw(t, kgo.ShareGroup("billing"), kgo.ConsumeTopics("orders"))
			return []string{errText(t, err), errText(t, cl.PollFetches(ctx).Err0())}
		},
		"PlainSASLOnly": func(t *testing.T) []string {
			withUser := fixtures.Start(t, fixtures.User("app", "app-secret"))
			cl, err := kgo.NewClient(kgo.SeedBrokers(withUser.Addr()), kgo.RequestRetries(0),
				kgo.SASL(scram.Auth{User: "app", Pass: "app-secret"}.AsSha512Mechanism()))
			require.NoError(t, err)
			t.Cleanup(cl.Close)
			return []string{errText(t, cl.Ping(ctx))}
		},
		"MaxGroups": func(t *testing.T) []string {
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
			var texts []string
			for i := 0; ; i++ {
				resp, err := k.Admin().CommitOffsets(ctx, fmt.Sprintf("g%03d", i), offs)
				require.NoError(t, err)
				if err := resp.Error(); err != nil {
					texts = append(texts, err.Error())
					break
				}
			}
			cl := raw(t, kgo.ConsumerGroup("one-too-many"), kgo.ConsumeTopics("orders"), kgo.Balancers(kgo.RangeBalancer()))
			return append(texts, errText(t, cl.PollFetches(ctx).Err0()))
		},
	}
	for _, row := range rows {
		if len(row.Texts["kgo"]) == 0 {
			continue
		}
		found := false
		for _, rule := range row.Rules {
			found = found || scenarios[rule] != nil
		}
		assert.True(t, found, "troubleshooting quotes kgo for %v, but no scenario here checks it", row.Rules)
	}
	for rule, run := range scenarios {
		t.Run(rule, func(t *testing.T) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute) // MaxGroups makes 257 commits
			defer cancel()
			row, ok := readme.RowFor(rows, rule)
			require.True(t, ok, "the troubleshooting table has no row for %s", rule)
			require.NotEmpty(t, row.Texts["kgo"], "the %s row quotes no kgo text", rule)
			got := run(t)
			for _, quote := range row.Texts["kgo"] {
				assert.True(t, slices.ContainsFunc(got, func(g string) bool { return readme.Matches(quote, g) }),
					"troubleshooting quotes kgo as %q for %s; kgo printed %q", quote, rule, got)
			}
		})
	}
}

// TestDocsNameRealTests keeps README.md, CHANGELOG.md and docs/ honest
// about their proof:
// every test, fuzz target or example they name exists, and every file they
// link to is in the repository.
func TestDocsNameRealTests(t *testing.T) {
	t.Parallel()
	funcs := map[string]bool{}
	declared := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Example|Benchmark)\w*)\(`)
	require.NoError(t, fs.WalkDir(os.DirFS(repoRoot), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return fs.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(repo(path))
			if err != nil {
				return err
			}
			for _, m := range declared.FindAllStringSubmatch(string(data), -1) {
				funcs[m[1]] = true
			}
		}
		return nil
	}))
	named := regexp.MustCompile("`((?:Test|Fuzz|Example|Benchmark)[A-Z]\\w*)")
	for _, doc := range userDocs(t) {
		data, err := os.ReadFile(repo(doc))
		require.NoError(t, err)
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			assert.True(t, funcs[m[1]], "%s names %s, which no _test.go declares", doc, m[1])
		}
	}
}

// TestReadmeNamesEveryVASTTopicConfig keeps the rows about
// VASTTopicConfigsOnly (the troubleshooting fix and the rules table) naming
// every topic config the VAST profile accepts, from the broker's own list.
func TestReadmeNamesEveryVASTTopicConfig(t *testing.T) {
	t.Parallel()
	var rows []string
	for _, doc := range []string{readme.TroubleshootingPage, "docs/vast-rules.md"} {
		data, err := os.ReadFile(repo(doc))
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			_, after, ok := strings.Cut(line, "| `VASTTopicConfigsOnly` | ")
			if ok && strings.Contains(after, "retention.ms") {
				rows = append(rows, after)
			}
		}
	}
	require.Len(t, rows, 2, "the troubleshooting row and the rules table row")
	for _, row := range rows {
		for _, k := range broker.VASTTopicConfigs() {
			assert.Contains(t, row, "`"+k+"`", row)
		}
	}
}

// repoRoot is the module root, where the docs and examples are, from this
// package's directory.
const repoRoot = ".."

// repo returns the path of a file named relative to the module root.
func repo(path string) string { return filepath.Join(repoRoot, path) }

// userDocs returns the Markdown pages users read, relative to the module
// root: README.md, CHANGELOG.md and docs/*.md.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := fs.Glob(os.DirFS(repoRoot), "docs/*.md")
	require.NoError(t, err)
	return append(docs, "README.md", "CHANGELOG.md")
}

// mdLink matches an inline Markdown link's target: a path, an anchor, or
// both. Targets with a scheme (https:, mailto:) are left out.
var mdLink = regexp.MustCompile(`\]\(([^()\s:#]*)(#[^()\s]*)?\)`)

// TestDocsLinksResolve keeps every link between the user docs whole: a
// relative link names a file or directory in the repository, and an anchor
// (#section) names a heading of the page it points to, as GitHub makes
// anchors from headings.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) map[string]bool {
		if a, ok := anchorsOf[page]; ok {
			return a
		}
		data, err := os.ReadFile(repo(page))
		require.NoError(t, err)
		a := markdownAnchors(string(data))
		anchorsOf[page] = a
		return a
	}
	for _, doc := range userDocs(t) {
		data, err := os.ReadFile(repo(doc))
		require.NoError(t, err)
		n := 0
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(string(data)), -1) {
			path, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if path == "" && anchor == "" {
				continue
			}
			n++
			target := doc
			if path != "" {
				target = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(repo(target)); !assert.NoError(t, err, "%s links to %s", doc, path+m[2]) {
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(target, ".md") {
				assert.True(t, anchors(target)[anchor], "%s links to %s: %s has no heading with anchor #%s", doc, path+m[2], target, anchor)
			}
		}
		if doc == "README.md" || doc == "docs/README.md" {
			assert.Positive(t, n, "%s links to nothing: the link pattern is broken", doc)
		}
	}
}

// TestMarkdownAnchors pins the anchors GitHub makes of headings, which
// TestDocsLinksResolve relies on.
func TestMarkdownAnchors(t *testing.T) {
	t.Parallel()
	a := markdownAnchors("# Will my app run on VAST?\n```sh\n# not a heading\n```\n## The `-topic` flag & [its](x.md) rules\n## Faults\n## Faults\n")
	assert.Equal(t, map[string]bool{"will-my-app-run-on-vast": true, "the--topic-flag--its-rules": true, "faults": true, "faults-1": true}, a)
}

// markdownAnchors returns the anchors of page's headings as GitHub makes
// them: the heading's text (code spans and link texts kept, link targets
// dropped) in lower case, with every character but letters, digits, spaces,
// hyphens and underscores removed and spaces made hyphens; a repeated
// anchor gets -1, -2 and so on. Lines in fenced code blocks are not headings.
func markdownAnchors(page string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkText := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	drop := regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(withoutCode(page), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := linkText.ReplaceAllString(m[1], "$1")
		slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// withoutCode returns page with the lines of its fenced code blocks
// blanked, so that a shell comment is not a heading nor a JSON array a
// link.
func withoutCode(page string) string {
	lines := strings.Split(page, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}
