// Command startup measures how soon vastfake answers its first Metadata
// request, and its resident memory at idle, three ways: the container image
// under podman (or docker), started with the engine's command and, when
// DOCKER_HOST is set, with this module's Run; the vastfake binary as a
// process; and the broker embedded in a Go process (broker.New). Every figure is the median
// of -rounds runs, with the lowest and highest.
//
//	go run ./cmd/vastimage -o /tmp/vastfake.tar && podman load -i /tmp/vastfake.tar
//	cd containers && go run ./cmd/startup -rounds 9
//
// "Start" is the moment before the command that starts the broker
// (podman run -d, the binary's exec, broker.New) and "first answer" the
// moment a Metadata v1 request on a new connection to the Kafka port is
// answered; the connection is tried every 2 ms. The idle figure is VmRSS
// of the broker's process a second after its first answer, with no client
// connected.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/containers"
)

func main() {
	engine := flag.String("engine", "podman", "the container engine's command: podman or docker")
	image := flag.String("image", "vastfake:latest", "the image to start")
	rounds := flag.Int("rounds", 5, "runs of each way")
	flag.Parse()
	if err := run(*engine, *image, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
}

func run(engine, image string, rounds int) error {
	dir, err := os.MkdirTemp("", "startup")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "vastfake")
	build := exec.Command("go", "build", "-o", bin, "github.com/vastfake/vastfake/cmd/vastfake")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	out, err := exec.Command(engine, "image", "inspect", "--format", "{{.Size}}", image).Output()
	if err != nil {
		return fmt.Errorf("%s image inspect %s: %w (load it first: go run ./cmd/vastimage -o vastfake.tar && %s load -i vastfake.tar)", engine, image, err, engine)
	}
	size, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	fmt.Printf("image %s: %.1f MiB (%s image inspect)\n\n", image, size/(1<<20), engine)

	var ways = []struct {
		name  string
		start func() (time.Duration, float64, error)
	}{
		{"container (" + engine + " run -d)", func() (time.Duration, float64, error) { return container(engine, image) }},
		{"binary (a process)", func() (time.Duration, float64, error) { return process(bin) }},
		{"in process (broker.New)", inProcess},
	}
	if os.Getenv("DOCKER_HOST") != "" {
		ways = slices.Insert(ways, 1, struct {
			name  string
			start func() (time.Duration, float64, error)
		}{"Testcontainers (containers.Run until it returns)", func() (time.Duration, float64, error) { return testcontainer(image) }})
	}
	fmt.Println("| how | start to first Metadata answer | resident memory at idle |")
	fmt.Println("| --- | --- | --- |")
	for _, w := range ways {
		var firsts, rss []float64
		for range rounds {
			first, mem, err := w.start()
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			firsts = append(firsts, float64(first.Microseconds())/1000)
			if mem > 0 {
				rss = append(rss, mem)
			}
		}
		memCell := "(as the container's)"
		if strings.HasPrefix(w.name, "in process") {
			memCell = "(the embedding process's)"
		}
		if len(rss) > 0 {
			memCell = spread(rss, "%.1f MiB")
		}
		fmt.Printf("| %s | %s | %s |\n", w.name, spread(firsts, "%.1f ms"), memCell)
	}
	return nil
}

// spread formats the median of xs with the lowest and highest.
func spread(xs []float64, format string) string {
	slices.Sort(xs)
	f := func(x float64) string { return fmt.Sprintf(format, x) }
	return fmt.Sprintf("%s (%s–%s)", f(xs[len(xs)/2]), f(xs[0]), f(xs[len(xs)-1]))
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// container starts the image with its Kafka port on a free loopback port,
// measures the first answer and the idle RSS of its process, and removes
// it.
func container(engine, image string) (time.Duration, float64, error) {
	port, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	name := fmt.Sprintf("vastfake-startup-%d-%d", os.Getpid(), port)
	defer exec.Command(engine, "rm", "-f", name).Run()
	started := make(chan error, 1)
	t0 := time.Now()
	go func() {
		out, err := exec.Command(engine, "run", "-d", "--name", name, "-p", addr+":9092", "-e", "VASTFAKE_ADVERTISE="+addr, image).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s run: %w: %s", engine, err, out)
		}
		started <- err
	}()
	first, err := firstAnswer(addr, t0, 30*time.Second)
	if runErr := <-started; runErr != nil {
		return 0, 0, runErr
	}
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(time.Second) // idle, for the memory figure
	out, err := exec.Command(engine, "inspect", "--format", "{{.State.Pid}}", name).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("%s inspect: %w", engine, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, 0, err
	}
	rss, err := vmRSS(pid)
	return first, rss, err
}

// testcontainer runs the image with containers.Run (random ports, PUT
// /advertise, GET /healthz) and measures until Run returns, ready for
// clients; then it removes the container.
func testcontainer(image string) (time.Duration, float64, error) {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true") // the reaper is an image to pull
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	c, err := containers.Run(ctx, containers.Image(image))
	ready := time.Since(t0)
	if c != nil {
		defer c.Terminate(context.Background())
	}
	if err != nil {
		return 0, 0, err
	}
	if err := metadata(c.Bootstrap()); err != nil {
		return 0, 0, err
	}
	return ready, 0, nil
}

// process starts the binary on a free loopback port, measures the first
// answer and its idle RSS, and ends it with SIGTERM.
func process(bin string) (time.Duration, float64, error) {
	port, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "-listen", addr)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	first, err := firstAnswer(addr, t0, 30*time.Second)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(time.Second)
	rss, err := vmRSS(cmd.Process.Pid)
	return first, rss, err
}

// inProcess starts the broker in this process and measures its first
// answer; its memory is this process's and is not reported.
func inProcess() (time.Duration, float64, error) {
	t0 := time.Now()
	b, err := broker.New(broker.WithListen("127.0.0.1:0"))
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	first, err := firstAnswer(b.Addr(), t0, 30*time.Second)
	return first, 0, err
}

// firstAnswer tries a Metadata request on a new connection to addr every
// 2 ms until one is answered, and returns how long after t0 that was.
func firstAnswer(addr string, t0 time.Time, limit time.Duration) (time.Duration, error) {
	var last error
	for time.Since(t0) < limit {
		if last = metadata(addr); last == nil {
			return time.Since(t0), nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, fmt.Errorf("no Metadata answer from %s in %v: %v", addr, limit, last)
}

// metadata sends one Metadata v1 request (all topics) on a new connection
// and reads its answer.
func metadata(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("startup")).AppendRequest(nil, req, 1)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return err // a port the engine forwards accepts before the broker does, then closes
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return err
	}
	if len(body) < 4 || binary.BigEndian.Uint32(body) != 1 {
		return errors.New("bad Metadata answer")
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(1)
	if err := resp.ReadFrom(body[4:]); err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("Metadata answer without brokers")
	}
	return nil
}

// vmRSS returns the resident set of process pid in MiB, from
// /proc/pid/status.
func vmRSS(pid int) (float64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
