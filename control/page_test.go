package control_test

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// chromiumPath is Debian's chromium package.
const chromiumPath = "/usr/bin/chromium"

// needChromium skips the test when Chromium is not installed, unless CI
// is set, where it fails (CI installs it).
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		msg := "the live page test needs " + chromiumPath + " (apt-get install -y chromium): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// chromium runs headless Chromium with args and a fresh profile and
// returns its stdout.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // against a hang: Chromium takes a minute or more on a loaded machine
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // Chromium's helpers may hold the pipes briefly
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	partitionBox = regexp.MustCompile(`<div class="partition"[^>]*>`)
	dataAttr     = regexp.MustCompile(`data-([a-z]+)="([^"]*)"`)
)

// TestLivePage draws the "a group shares six partitions" picture from a real
// broker: a topic of six partitions and a group of two consumers that each
// committed part of their partitions. Headless Chromium runs the page's
// script; every partition box must name its owner and lag, and a
// screenshot of it must be a real picture.
func TestLivePage(t *testing.T) {
	t.Parallel()
	needChromium(t)
	k := fixtures.Start(t, fixtures.Topic("events", 6), fixtures.Topic("audit", 2))
	url := serve(t, k) + "/"
	for p := int32(0); p < 6; p++ {
		k.Produce("events", p, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	}
	owners := groupOfTwo(t, k, "g-classic", "events", 6)

	dom := chromium(t, "--virtual-time-budget=3000", "--dump-dom", url)
	boxes := map[string]map[string]string{} // "topic/group/partition" -> attributes
	for _, tag := range partitionBox.FindAll(dom, -1) {
		attrs := map[string]string{}
		for _, m := range dataAttr.FindAllSubmatch(tag, -1) {
			attrs[string(m[1])] = string(m[2])
		}
		boxes[attrs["topic"]+"/"+attrs["group"]+"/"+attrs["partition"]] = attrs
	}
	require.Len(t, boxes, 8, "six boxes for the group on events, two for audit that no group reads:\n%s", dom)
	for p := int32(0); p < 6; p++ {
		box := boxes["events/g-classic/"+strconv.Itoa(int(p))]
		require.NotNil(t, box, "partition %d", p)
		assert.Equal(t, owners[p], box["owner"], "partition %d's owner", p)
		assert.Equal(t, strconv.Itoa(6-int(p)), box["lag"], "partition %d's lag: end 10, committed %d", p, 4+p)
	}
	assert.NotNil(t, boxes["audit//0"])
	assert.Contains(t, string(dom), `data-group="g-classic" data-generation=`, "the rebalance timeline shows the group")
	assert.Contains(t, string(dom), "member-one")
	assert.Contains(t, string(dom), "member-two")

	shot := filepath.Join(t.TempDir(), "live.png")
	if d := os.Getenv("VASTFAKE_SCREENSHOT_DIR"); d != "" {
		shot = filepath.Join(d, "live.png")
	}
	chromium(t, "--virtual-time-budget=3000", "--window-size=1200,800", "--screenshot="+shot, url)
	data, err := os.ReadFile(shot)
	require.NoError(t, err)
	if keep := os.Getenv("VASTFAKE_SCREENSHOT"); keep != "" {
		require.NoError(t, os.WriteFile(keep, data, 0o644))
	}
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err, "the screenshot is a PNG")
	assert.Equal(t, 1200, img.Bounds().Dx())
	assert.Equal(t, 800, img.Bounds().Dy())
	colors := map[color.RGBA]bool{}
	saturated := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 2 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0}
			colors[c] = true
			if max(c.R, c.G, c.B)-min(c.R, c.G, c.B) > 80 {
				saturated++ // the owners' colours: borders, labels, chips
			}
		}
	}
	assert.Greater(t, len(colors), 50, "a blank or flat screenshot")
	assert.Greater(t, saturated, 200, "no member colours drawn")
}

// TestLivePageBrokers: with several brokers the live page shows each broker
// id, which is down, how many partitions each leads, and each partition's
// leader; with one broker the card stays hidden.
func TestLivePageBrokers(t *testing.T) {
	t.Parallel()
	needChromium(t)
	// The down broker keeps its partitions for the whole test: with Kafka's
	// 9 s fencing delay a slow Chromium start would see them moved.
	k := fixtures.Start(t, fixtures.Brokers(3), fixtures.Profile("kafka"), fixtures.Topic("events", 4), fixtures.ElectionDelay(time.Hour))
	url := serve(t, k) + "/"
	require.NoError(t, k.Broker().BrokerDown(2))
	require.NoError(t, k.Broker().MoveLeader("events", 3, 1))

	dom := string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", url))
	assert.Contains(t, dom, `<section class="card" id="brokers">`, "the card shows with several brokers")
	// Partitions 0..3 are led by brokers 0, 1, 2 and (moved) 1.
	assert.Contains(t, dom, `data-broker="0" data-down="false"`)
	assert.Contains(t, dom, `data-broker="2" data-down="true" class="down"`)
	assert.Contains(t, dom, "leads 2 partitions", "broker 1 leads partitions 1 and 3")
	assert.Contains(t, dom, "leads 1 partition<", "broker 0 leads partition 0")
	assert.Contains(t, dom, "leader 1 (epoch 1)", "the moved partition names its leader and epoch")
	for p, leader := range []string{"0", "1", "2", "1"} {
		assert.Regexp(t, `data-topic="events" data-partition="`+strconv.Itoa(p)+`"[^>]*data-leader="`+leader+`"`, dom, "partition %d's leader", p)
	}

	one := fixtures.Start(t, fixtures.Topic("events", 1))
	dom = string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", serve(t, one)+"/"))
	assert.Contains(t, dom, `<section class="card" id="brokers" hidden="">`, "no card with one broker")
}

// TestLivePageTransactions: while a transaction is open the page lists it,
// with its partitions; with none open the card is hidden.
func TestLivePageTransactions(t *testing.T) {
	t.Parallel()
	needChromium(t)
	// The broker's clock stands still, so that however long Chromium takes
	// on a loaded machine, the transaction does not reach its timeout (kgo's
	// 40 s) and end before the page is drawn.
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("ledger", 2),
		fixtures.ManualClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)))
	url := serve(t, k) + "/"
	p := k.TransactionalClient("ledger-writer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Partition: 1, Value: []byte("x")}).FirstErr())

	dom := string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", url))
	assert.Contains(t, dom, `<section class="card" id="transactions">`, "the card shows while a transaction is open")
	assert.Contains(t, dom, `data-transaction="ledger-writer"`)
	assert.Contains(t, dom, "ledger/1")

	// A deadline of its own: Chromium may have taken longer than the first.
	endCtx, cancelEnd := context.WithTimeout(context.Background(), deadline)
	defer cancelEnd()
	require.NoError(t, p.EndTransaction(endCtx, kgo.TryCommit))
	dom = string(chromium(t, "--virtual-time-budget=3000", "--dump-dom", url))
	assert.Contains(t, dom, `<section class="card" id="transactions" hidden="">`, "no card with none open")
}
