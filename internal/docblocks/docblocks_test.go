//go:build unix

package docblocks_test

// Every code block of the pages a newcomer follows without a clone
// (getting-started, packages, containers) runs as written, the way a user
// would run it: in a scratch directory holding the files a release carries
// (the wheels and npm tarballs of VASTFAKE_DIST, the image), a blank
// project or Go module, and the engine DOCKER_HOST names. Blocks run in
// page order, one scratch directory a page, so that a block sees what the
// ones above it made. Two substitutions are made, and no others:
// /path/to/vastfake is this checkout, and a Go module "in your module" is a
// new one holding the page's test.
//
// TestEveryBlockIsChecked says which check each block gets; a block no
// check knows fails it. TestDocBlocksRun runs those that need no container
// engine (test.sh, with VASTFAKE_DIST); TestDocBlocksWithAnEngine runs the
// others (containers/test.sh, with DOCKER_HOST and VASTFAKE_DOCS_ENGINE set).

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/vastfake/vastfake/internal/docblocks"
)

// The image a release would carry, built once for every page's session.
var (
	imageOnce sync.Once
	imageDir  string
	imageErr  error
)

// pages are the pages whose blocks run.
var pages = []string{"docs/getting-started.md", "docs/packages.md", "docs/containers.md"}

// quoted are the repository's files a page quotes whole (checked by the
// e2e docs tests, and run by test.sh where they live).
var quoted = []string{"examples/gettingstarted/billing_test.go", "examples/pytest/test_billing.py", "js/test/billing.test.js"}

// actionlintVersion is the actionlint the workflow blocks are checked with
// (and .github/workflows, by test.sh).
const actionlintVersion = "v1.7.12"

// check is how a block is checked: its name and whether it needs a
// container engine.
type check struct {
	name   string
	engine bool
}

var root = func() string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		panic(err)
	}
	return dir
}()

// checkOf returns the check block gets, or an error saying why it gets
// none.
func checkOf(b docblocks.Block) (check, error) {
	for _, f := range quoted {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err == nil && b.Text == string(data) {
			return check{"quoted", false}, nil
		}
	}
	engineText := regexp.MustCompile(`(^|\s)(docker|podman) `).MatchString(b.Text)
	switch b.Check {
	case "serves", "engine", "compose", "node22", "attach", "podman-service":
		return check{b.Check, true}, nil
	case "in-clone", "in-module":
		return check{b.Check, engineText}, nil
	case "test.sh", "workflow", "ci-conf":
		return check{b.Check, false}, nil
	case "":
	default:
		return check{}, fmt.Errorf("%s: no check is named %q", b, b.Check)
	}
	switch b.Lang {
	case "text":
		return check{"text", false}, nil
	case "sh":
		return check{"sh", engineText}, nil
	case "console":
		return check{"console", engineText}, nil
	case "go":
		if strings.HasPrefix(b.Text, "package ") {
			return check{"go", false}, nil
		}
		return check{}, fmt.Errorf("%s: a Go block is a whole file, from its package clause", b)
	case "java":
		return check{"java", false}, nil
	}
	return check{}, fmt.Errorf("%s: give it a check (<!-- check: NAME --> above it), or a language whose blocks run", b)
}

func allBlocks(t *testing.T) map[string][]docblocks.Block {
	out := map[string][]docblocks.Block{}
	for _, page := range pages {
		blocks, err := docblocks.Parse(filepath.Join(root, page))
		require.NoError(t, err)
		out[page] = blocks
	}
	return out
}

func TestEveryBlockIsChecked(t *testing.T) {
	for page, blocks := range allBlocks(t) {
		require.NotEmpty(t, blocks, page)
		for _, b := range blocks {
			c, err := checkOf(b)
			if err != nil {
				t.Error(err)
				continue
			}
			t.Logf("%s:%d %s: %s", page, b.Line, b.Lang, c.name)
		}
	}
}

func TestDocBlocksRun(t *testing.T) {
	dist := os.Getenv("VASTFAKE_DIST")
	if dist == "" {
		t.Skip("needs VASTFAKE_DIST, the packages of go run ./cmd/vastdist -platforms host (test.sh sets it)")
	}
	runPages(t, dist, false)
}

func TestDocBlocksWithAnEngine(t *testing.T) {
	dist := os.Getenv("VASTFAKE_DIST")
	if os.Getenv("VASTFAKE_DOCS_ENGINE") == "" || dist == "" {
		t.Skip("needs a container engine (DOCKER_HOST), VASTFAKE_DOCS_ENGINE and VASTFAKE_DIST: containers/test.sh sets them")
	}
	runPages(t, dist, true)

	// The image the pages loaded (vastfake:latest) is the size the
	// Containers page says, within half a MiB.
	page, err := os.ReadFile(filepath.Join(root, "docs/containers.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`The image is ([0-9.]+) MiB`).FindSubmatch(page)
	require.NotNil(t, m, "docs/containers.md says how large the image is")
	said, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	out, err := exec.Command("docker", "image", "inspect", "vastfake:latest", "--format", "{{.Size}}").Output()
	require.NoError(t, err)
	size, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	require.NoError(t, err)
	t.Logf("the image is %.0f bytes, %.2f MiB; the page says %.1f MiB", size, size/(1<<20), said)
	require.InDelta(t, said, size/(1<<20), 0.5, "docs/containers.md's image size")
}

func runPages(t *testing.T, dist string, engine bool) {
	t.Cleanup(func() {
		if imageDir != "" {
			os.RemoveAll(imageDir)
		}
	})
	for page, blocks := range allBlocks(t) {
		any := false
		for _, b := range blocks {
			c, err := checkOf(b)
			require.NoError(t, err)
			any = any || c.engine == engine
		}
		if !any {
			continue // no block of this pass: no session
		}
		t.Run(page, func(t *testing.T) {
			s := newSession(t, page, dist, engine)
			for _, b := range blocks {
				c, err := checkOf(b)
				require.NoError(t, err)
				if c.engine != engine {
					continue
				}
				t.Run(fmt.Sprintf("line%d-%s", b.Line, c.name), func(t *testing.T) { s.run(t, b, c) })
			}
			s.finish(t)
		})
	}
}

// session is one page's scratch directory and environment.
type session struct {
	page    string
	dir     string // the user's directory: the release's files, a project
	module  string // "your module": a new Go module with the page's test
	env     []string
	goFiles int // Go files written to module since it was last compiled
}

func newSession(t *testing.T, page, dist string, engine bool) *session {
	dir := t.TempDir()
	s := &session{page: page, dir: dir, module: filepath.Join(dir, "module")}
	// The files of a release, as downloaded: the wheels, the offline npm
	// tarballs, and a directory of wheels.
	copyGlob(t, filepath.Join(dist, "python", "*.whl"), dir)
	copyGlob(t, filepath.Join(dist, "npm", "offline", "*.tgz"), dir)
	copyGlob(t, filepath.Join(dist, "python", "*.whl"), filepath.Join(dir, "dist", "python"))
	// A Python of the user's own: a virtual environment that sees the
	// system's pytest and confluent-kafka; Go installs into bin/.
	venv := filepath.Join(dir, "venv")
	// (Without a pip of its own: the system's, run by the venv's python3,
	// installs into the venv, and ensurepip takes seconds.)
	out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip", venv).CombinedOutput()
	require.NoError(t, err, "python3 -m venv: %s", out)
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "GOBIN", k == "VASTFAKE_BIN", k == "VASTFAKE_SRC", k == "VASTFAKE_ARGS", k == "VASTFAKE_URL",
			k == "VASTFAKE_IMAGE", k == "PYTHONPATH", k == "VIRTUAL_ENV":
		default:
			env = append(env, kv)
		}
	}
	bin := filepath.Join(dir, "bin")
	path := filepath.Join(venv, "bin") + string(os.PathListSeparator) + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	s.env = append(env, "PATH="+path, "GOBIN="+bin, "VIRTUAL_ENV="+venv, "npm_config_audit=false", "npm_config_fund=false",
		"npm_config_update_notifier=false", "npm_config_prefer_offline=true", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	if engine {
		s.env = append(s.env, "TESTCONTAINERS_RYUK_DISABLED=true")
		// The image of a release, built as the release builds it, once.
		imageOnce.Do(func() {
			imageDir, imageErr = os.MkdirTemp("", "vastfake-docs-image-")
			if imageErr == nil {
				out, err := exec.Command("go", "-C", root, "run", "./cmd/vastimage", "-o", filepath.Join(imageDir, "image.tar")).CombinedOutput()
				if err != nil {
					imageErr = fmt.Errorf("go run ./cmd/vastimage: %v\n%s", err, out)
				}
			}
		})
		require.NoError(t, imageErr)
		copyFile(t, filepath.Join(imageDir, "image.tar"), filepath.Join(dir, "vastfake-0.1.0-image-linux-amd64.tar"))
		// The wheel installed, for the pages' Python, as a user who
		// followed Getting started has it.
		s.cmd(t, dir, "python3", "-m", "pip", "install", "-q", "--no-deps", firstGlob(t, filepath.Join(dir, "vastfake-*.whl")))
	}
	require.NoError(t, os.MkdirAll(s.module, 0o755))
	s.cmd(t, s.module, "go", "mod", "init", "example.com/app")
	if page == "docs/getting-started.md" && !engine {
		// The page's first Go test is the module's.
		copyFile(t, filepath.Join(root, "examples/gettingstarted/billing_test.go"), filepath.Join(s.module, "billing_test.go"))
		s.goFiles++
	}
	return s
}

// cmd runs name with args in dir, in the session's environment, and
// returns its output, failing the test if it fails.
func (s *session) cmd(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	c := exec.Command(s.lookPath(name), args...)
	c.Dir, c.Env = dir, s.env
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s %s in %s:\n%s", name, strings.Join(args, " "), dir, out)
	return string(out)
}

// lookPath finds name on the session's PATH (exec.Command would look on
// the test's own).
func (s *session) lookPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, kv := range s.env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(path) {
				file := filepath.Join(dir, name)
				if fi, err := os.Stat(file); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return file
				}
			}
		}
	}
	return name
}

// shell runs text with bash -e, as a user pasting the block would (with
// the substitution of /path/to/vastfake), and returns its output.
func (s *session) shell(t *testing.T, dir, text string) string {
	t.Helper()
	text = strings.ReplaceAll(text, "/path/to/vastfake", root)
	c := exec.Command("bash", "-e", "-o", "pipefail", "-c", text)
	c.Dir, c.Env = dir, s.env
	out, err := c.CombinedOutput()
	require.NoError(t, err, "in %s:\n%s\n%s", dir, text, out)
	return string(out)
}

func (s *session) run(t *testing.T, b docblocks.Block, c check) {
	switch c.name {
	case "quoted", "text":
		// quoted: the e2e docs tests check the quote, test.sh runs the file.
	case "sh", "engine":
		switch b.Lang {
		case "sh":
			t.Log(s.shell(t, s.dir, b.Text))
		case "js":
			name := "orders.test.mjs"
			if strings.Contains(b.Text, "require(") && !strings.Contains(b.Text, "import ") {
				name = "example.test.cjs"
			}
			require.NoError(t, os.WriteFile(filepath.Join(s.dir, name), []byte(b.Text), 0o644))
		case "python":
			t.Log(s.cmd(t, s.dir, "python3", "-c", b.Text))
		default:
			t.Fatalf("%s: no runner for %s blocks", b, b.Lang)
		}
	case "in-clone":
		// What it leaves in the checkout goes: a user's clone is theirs.
		before := topLevel(t, root)
		defer func() {
			for name := range topLevel(t, root) {
				if !before[name] {
					os.RemoveAll(filepath.Join(root, name))
				}
			}
		}()
		t.Log(s.shell(t, root, b.Text))
	case "in-module":
		t.Log(s.shell(t, s.module, b.Text))
		s.cmd(t, s.module, "go", "vet", "./...")
		s.goFiles = 0
	case "go":
		file := fmt.Sprintf("example%d_test.go", b.Line)
		require.NoError(t, os.WriteFile(filepath.Join(s.module, file), []byte(b.Text), 0o644))
		s.goFiles++
	case "console":
		s.console(t, b)
	case "java":
		s.java(t, b)
	case "workflow":
		file := filepath.Join(t.TempDir(), "workflow.yml")
		require.NoError(t, os.WriteFile(file, []byte(b.Text), 0o644))
		s.cmd(t, root, "go", "run", "github.com/rhysd/actionlint/cmd/actionlint@"+actionlintVersion, "-shellcheck=", "-pyflakes=", file)
	case "ci-conf":
		ci, err := os.ReadFile(filepath.Join(root, ".ci/run"))
		require.NoError(t, err)
		_, conf, ok := strings.Cut(string(ci), "<<'CONF'\n")
		require.True(t, ok, ".ci/run writes containers.conf from a heredoc")
		conf, _, _ = strings.Cut(conf, "CONF\n")
		require.Equal(t, conf, b.Text, "the page shows the containers.conf CI uses")
	case "test.sh":
		script, err := os.ReadFile(filepath.Join(root, "test.sh"))
		require.NoError(t, err)
		cmd := strings.TrimSpace(b.Text)
		cmd = strings.Replace(cmd, "-o dist", `-o "$tmp/dist"`, 1)
		require.Contains(t, string(script), cmd, "test.sh runs %q as the page writes it", b.Text)
	case "serves":
		s.serves(t, b)
	case "compose":
		s.compose(t, b)
	case "node22":
		out, err := exec.Command("node", "-p", "process.versions.node.split('.')[0]").Output()
		if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n >= 22 {
			t.Skipf("node on PATH is %s, 22 or newer already", strings.TrimSpace(string(out)))
		}
		t.Log(s.shell(t, s.dir, b.Text))
	case "attach":
		s.attach(t, b)
	case "podman-service":
		s.podmanService(t, b)
	default:
		t.Fatalf("%s: no runner for the check %q", b, c.name)
	}
}

func (s *session) finish(t *testing.T) {
	if s.goFiles > 0 {
		// Go files no later block compiled, in a module that holds them.
		s.cmd(t, s.module, "go", "vet", "./...")
	}
}

// console runs each "$ " line of b and compares what it prints with the
// lines under it.
func (s *session) console(t *testing.T, b docblocks.Block) {
	var cmd string
	var want []string
	flush := func() {
		if cmd == "" {
			return
		}
		c := exec.Command("bash", "-c", cmd)
		c.Dir, c.Env = s.dir, s.env
		out, _ := c.CombinedOutput() // the exit code is part of the transcript
		require.Equal(t, strings.Join(want, "\n"), strings.TrimRight(string(out), "\n"), "$ %s", cmd)
	}
	for _, line := range strings.Split(strings.TrimRight(b.Text, "\n"), "\n") {
		if c, ok := strings.CutPrefix(line, "$ "); ok {
			flush()
			cmd, want = c, nil
			continue
		}
		want = append(want, line)
	}
	flush()
}

// java compiles b (a JUnit 5 class) against stand-ins for JUnit's three
// annotations, and runs it as JUnit would: @BeforeAll, each @Test, then
// @AfterAll; the class runs the binary Getting started installed.
func (s *session) java(t *testing.T, b docblocks.Block) {
	if _, err := exec.LookPath("javac"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("needs javac (apt-get install -y default-jdk-headless)")
		}
		t.Fatal("javac: not found")
	}
	dir := t.TempDir()
	name := regexp.MustCompile(`class (\w+)`).FindStringSubmatch(b.Text)[1]
	files := map[string]string{
		name + ".java":                         b.Text,
		"org/junit/jupiter/api/BeforeAll.java": annotation("BeforeAll"),
		"org/junit/jupiter/api/AfterAll.java":  annotation("AfterAll"),
		"org/junit/jupiter/api/Test.java":      annotation("Test"),
		"Run.java": `import java.lang.reflect.*;
public class Run {
  public static void main(String[] args) throws Throwable {
    Class<?> c = Class.forName(args[0]);
    for (Method m : c.getDeclaredMethods()) if (m.isAnnotationPresent(org.junit.jupiter.api.BeforeAll.class)) { m.setAccessible(true); m.invoke(null); }
    Constructor<?> k = c.getDeclaredConstructor(); k.setAccessible(true); Object o = k.newInstance();
    for (Method m : c.getDeclaredMethods()) if (m.isAnnotationPresent(org.junit.jupiter.api.Test.class)) { m.setAccessible(true); m.invoke(o); System.out.println("passed " + m.getName()); }
    for (Method m : c.getDeclaredMethods()) if (m.isAnnotationPresent(org.junit.jupiter.api.AfterAll.class)) { m.setAccessible(true); m.invoke(null); }
  }
}
`,
	}
	var srcs []string
	for f, text := range files {
		path := filepath.Join(dir, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		srcs = append(srcs, f)
	}
	s.cmd(t, dir, "javac", append([]string{"-d", "classes"}, srcs...)...)
	out := s.cmd(t, dir, "java", "-cp", "classes", "Run", name)
	require.Contains(t, out, "passed ", out)
}

func annotation(name string) string {
	return "package org.junit.jupiter.api;\n@java.lang.annotation.Retention(java.lang.annotation.RetentionPolicy.RUNTIME)\npublic @interface " + name + " {}\n"
}

var portRe = regexp.MustCompile(`-p (\d+)(?:-(\d+))?:\d+`)

// serves runs b, whose last command is a broker in the foreground, until
// every host port it publishes accepts connections (and the control plane
// answers GET /healthz), then stops it with SIGTERM, as Ctrl-C or docker
// stop would, and expects it to exit 0.
func (s *session) serves(t *testing.T, b docblocks.Block) {
	var ports []int
	for _, m := range portRe.FindAllStringSubmatch(b.Text, -1) {
		lo, _ := strconv.Atoi(m[1])
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.Atoi(m[2])
		}
		for p := lo; p <= hi; p++ {
			ports = append(ports, p)
		}
	}
	require.NotEmpty(t, ports, "%s publishes no port to wait for", b)
	text := strings.ReplaceAll(b.Text, "/path/to/vastfake", root)
	c := exec.Command("bash", "-e", "-o", "pipefail", "-c", text)
	c.Dir, c.Env = s.dir, s.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	c.Stdout, c.Stderr = out, out
	require.NoError(t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	defer func() {
		// Whatever happened: nothing of it outlives the check.
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		for _, p := range ports {
			ids, _ := exec.Command("docker", "ps", "-q", "--filter", "publish="+strconv.Itoa(p)).Output()
			for _, id := range strings.Fields(string(ids)) {
				exec.Command("docker", "rm", "-f", id).Run()
			}
		}
	}()
	deadline := time.Now().Add(90 * time.Second)
	for _, p := range ports {
		addr := net.JoinHostPort("localhost", strconv.Itoa(p))
		for {
			select {
			case err := <-done:
				t.Fatalf("%s exited before it served %s (%v):\n%s", b, addr, err, out)
			default:
			}
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				if p != 8080 || healthy(addr) {
					break
				}
			}
			require.True(t, time.Now().Before(deadline), "%s: nothing answers on %s within 90 s:\n%s", b, addr, out)
			time.Sleep(100 * time.Millisecond)
		}
	}
	// docker run passes the signal on to the container.
	require.NoError(t, syscall.Kill(-c.Process.Pid, syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "%s exits 0 on SIGTERM:\n%s", b, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30 s of SIGTERM:\n%s", b, out)
	}
	t.Log(out.String())
}

func healthy(addr string) bool {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// compose runs the block's kafka service as Compose would (its image,
// command and environment) and waits for its health check, run as Compose
// runs it, to pass; it checks that every variable the service sets is one
// the binary reads. (No Compose here: docker run stands in for it.)
func (s *session) compose(t *testing.T, b docblocks.Block) {
	var file struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(b.Text), &file))
	svc, ok := file.Services["kafka"]
	require.True(t, ok, "the page's Compose file has a kafka service")
	require.Equal(t, "CMD", svc.Healthcheck.Test[0])
	name := "vastfake-docs-" + strconv.Itoa(os.Getpid())
	args := []string{"run", "-d", "--rm", "--name", name}
	for k, v := range svc.Environment {
		args = append(args, "-e", k+"="+v)
	}
	args = append(append(args, svc.Image), svc.Command...)
	s.cmd(t, s.dir, "docker", args...)
	defer exec.Command("docker", "rm", "-f", name).Run()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := exec.Command("docker", append([]string{"exec", name}, svc.Healthcheck.Test[1:]...)...)
		c.Env = s.env
		out, err := c.CombinedOutput()
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the health check never passed: %s", out)
		time.Sleep(200 * time.Millisecond)
	}
	logs := s.cmd(t, s.dir, "docker", "logs", name)
	require.NotContains(t, logs, "sets nothing", "every variable of the service is one the binary reads")
}

// attach runs b, which runs pytest against the broker VASTFAKE_URL names,
// with that broker running as the page's docker run starts it, and a test
// of the user's that uses the plugin's fixtures.
func (s *session) attach(t *testing.T, b docblocks.Block) {
	name := "vastfake-attach-" + strconv.Itoa(os.Getpid())
	s.cmd(t, s.dir, "docker", "run", "-d", "--rm", "--name", name, "-p", "9092:9092", "-p", "8080:8080", "vastfake:latest", "-profile", "kafka")
	defer exec.Command("docker", "rm", "-f", name).Run()
	project := filepath.Join(s.dir, "attach")
	require.NoError(t, os.MkdirAll(project, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "test_app.py"), []byte(
		"def test_app(vastfake, kafka_bootstrap):\n    assert kafka_bootstrap == 'localhost:9092'\n    assert vastfake.topics() == []\n"), 0o644))
	deadline := time.Now().Add(60 * time.Second)
	for !healthy("localhost:8080") {
		require.True(t, time.Now().Before(deadline), "the broker never answered GET /healthz")
		time.Sleep(100 * time.Millisecond)
	}
	out := s.shell(t, project, b.Text)
	require.Contains(t, out, "1 passed", out)
}

// lockedBuffer collects a process's output for the test to read.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func copyGlob(t *testing.T, pattern, dir string) {
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, files, "nothing matches %s", pattern)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range files {
		copyFile(t, f, filepath.Join(dir, filepath.Base(f)))
	}
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

func firstGlob(t *testing.T, pattern string) string {
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, files, pattern)
	return files[0]
}

// topLevel lists the names in dir.
func topLevel(t *testing.T, dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// podmanService runs b, which starts podman's Docker API service in the
// background on the socket DOCKER_HOST then names, checks that the socket
// answers the Docker API's ping, and stops the service.
func (s *session) podmanService(t *testing.T, b docblocks.Block) {
	sock := regexp.MustCompile(`unix://(\S+)`).FindStringSubmatch(b.Text)
	require.NotNil(t, sock, "%s names no socket", b)
	c := exec.Command("bash", "-e", "-o", "pipefail", "-c", b.Text+"\nwait\n")
	c.Dir, c.Env = s.dir, s.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	c.Stdout, c.Stderr = out, out
	require.NoError(t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	defer func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ping := exec.Command("curl", "-fsS", "--unix-socket", sock[1], "http://docker/_ping")
		if got, err := ping.Output(); err == nil && strings.TrimSpace(string(got)) == "OK" {
			return
		}
		require.True(t, time.Now().Before(deadline), "nothing answers the Docker API on %s within 30 s:\n%s", sock[1], out)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWorkflowsPassActionlint: the CI and release workflows pass actionlint,
// run as a Go module at the version the pages' workflow blocks are checked
// with.
func TestWorkflowsPassActionlint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, ".github/workflows has the CI and release workflows")
	c := exec.Command("go", append([]string{"run", "github.com/rhysd/actionlint/cmd/actionlint@" + actionlintVersion}, files...)...)
	c.Dir = root
	out, err := c.CombinedOutput()
	require.NoError(t, err, "actionlint:\n%s", out)
}
