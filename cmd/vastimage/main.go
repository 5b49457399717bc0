// Command vastimage builds vastfake's container image without a container
// daemon, a Dockerfile or a base image, and writes it as a tarball that
// docker load and podman load accept:
//
//	go run ./cmd/vastimage -o vastfake.tar          # then: podman load -i vastfake.tar
//	go run ./cmd/vastimage -o vastfake.tar.gz -arch arm64
//
// It builds cmd/vastfake as a static Linux binary (CGO_ENABLED=0, with go
// build as a subprocess, from the module the command runs in) and packs it
// as the one file of a FROM-scratch image: no shell and nothing else to
// pull, run as the non-root user 65532, with the binary as the entrypoint.
// The image is tagged vastfake:<version> and vastfake:latest; the version is
// the git tag on HEAD, or dev-<revision> (with -dirty for uncommitted
// changes), unless -version says otherwise. Its labels are the OCI ones:
// org.opencontainers.image.source, .version, .revision, .created, .title
// and .description.
//
// In the image the broker listens on 0.0.0.0:9092 (Kafka; with -brokers N
// on 9092, 9093, ...) and serves its control plane on 0.0.0.0:8080, set by
// VASTFAKE_LISTEN and VASTFAKE_HTTP in the image's environment, which
// docker run -e (or a flag after the image name) overrides.
//
// The archive is the docker-archive format: manifest.json naming the image
// config and the one layer, the config as JSON, and the layer as a tar.
// Every timestamp in it is the commit's time (or SOURCE_DATE_EPOCH), so two
// builds of one commit write the same bytes.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Image facts the docs and the Testcontainers helpers count on.
const (
	// Name is the repository of the image's tags.
	Name = "vastfake"
	// KafkaPort is the first broker's port in the image; broker i listens
	// on KafkaPort+i.
	KafkaPort = 9092
	// HTTPPort is the control plane's port in the image.
	HTTPPort = 8080
	// binaryPath is where the binary sits in the image.
	binaryPath = "/vastfake"
	// uid is the user the broker runs as: not root, and numeric, so that
	// Kubernetes' runAsNonRoot can check it without a passwd lookup.
	uid = 65532
	// source is the image's org.opencontainers.image.source label.
	source = "https://github.com/vastfake/vastfake"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "vastimage:", err)
		}
		os.Exit(2)
	}
}

// run parses args, builds the binary and writes the image.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vastimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "file to write the image tarball to; a name ending in .gz is gzipped (docker load and podman load take both)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binary and the image: amd64, arm64, ...")
	version := fs.String("version", "", "the image's version tag and label; default the git tag on HEAD, or dev-<revision>")
	binary := fs.String("binary", "", "pack this already built static Linux binary instead of building cmd/vastfake")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("want -o FILE and no arguments")
	}
	rev, dirty, when := gitState()
	if *version == "" {
		*version = defaultVersion(rev, dirty)
	}
	if !validTag(*version) {
		return fmt.Errorf("-version %q is not a valid image tag (letters, digits, '_', '.', '-'; at most 128, not starting with '.' or '-')", *version)
	}
	bin := *binary
	if bin == "" {
		dir, err := os.MkdirTemp("", "vastimage")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "vastfake")
		if err := buildBinary(bin, *arch, *version, rev, stderr); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img := image{
		Binary: data, Arch: *arch, Version: *version, Revision: rev, Created: when,
		Tags: []string{Name + ":" + *version, Name + ":latest"},
	}
	if err := writeFile(*out, img); err != nil {
		return err
	}
	fi, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%.1f MiB): %s\n", *out, float64(fi.Size())/(1<<20), strings.Join(img.Tags, ", "))
	return nil
}

// buildBinary builds cmd/vastfake of the module in the working directory as
// a static Linux binary for arch at path: no cgo, no file paths of this
// machine, no symbol table, and the image's version and revision for
// vastfake -version.
func buildBinary(path, arch, version, revision string, stderr io.Writer) error {
	ldflags := "-s -w -X main.imageVersion=" + version
	if revision != "" {
		ldflags += " -X main.imageRevision=" + revision
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", path, "github.com/vastfake/vastfake/cmd/vastfake")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// gitState returns HEAD's revision, whether the work tree has uncommitted
// changes, and the time of the commit (SOURCE_DATE_EPOCH when set, for
// reproducible builds); without git, an empty revision and the Unix epoch.
func gitState() (rev string, dirty bool, when time.Time) {
	when = time.Unix(0, 0).UTC()
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		dirty = len(bytes.TrimSpace(out)) > 0
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" && rev != "" {
		if out, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
			epoch = strings.TrimSpace(string(out))
		}
	}
	if n, err := strconv.ParseInt(epoch, 10, 64); err == nil {
		when = time.Unix(n, 0).UTC()
	}
	return rev, dirty, when
}

// defaultVersion is the git tag on HEAD when there is exactly one and the
// tree is clean, else dev-<12 hex digits of rev>, -dirty appended for
// uncommitted changes; "dev" outside git.
func defaultVersion(rev string, dirty bool) string {
	if !dirty {
		if out, err := exec.Command("git", "tag", "--points-at", "HEAD").Output(); err == nil {
			if tags := strings.Fields(string(out)); len(tags) == 1 && validTag(tags[0]) {
				return tags[0]
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// tagPattern is the tag part of an image reference, as the Docker and OCI
// distribution specs define it.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func validTag(s string) bool { return tagPattern.MatchString(s) }

// image is what the archive holds.
type image struct {
	Binary   []byte
	Arch     string
	Version  string
	Revision string
	Created  time.Time
	Tags     []string
}

// Env is the image's environment: the container defaults of the binary,
// which docker run -e or flags override.
func (img image) Env() []string {
	return []string{
		"VASTFAKE_LISTEN=0.0.0.0:" + strconv.Itoa(KafkaPort),
		"VASTFAKE_HTTP=0.0.0.0:" + strconv.Itoa(HTTPPort),
	}
}

// writeFile writes img to path, gzipped when path ends in .gz, through a
// temporary file renamed at the end, so a failed run leaves no half image.
func writeFile(path string, img image) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(f)
		zw.ModTime = img.Created
		w = zw
	}
	err = writeArchive(w, img)
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeArchive writes img in the docker-archive format: the layer tar as
// <digest>/layer.tar, the config as <digest>.json and manifest.json naming
// both with the tags.
func writeArchive(w io.Writer, img image) error {
	layer, err := layerTar(img)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	layerDigest := "sha256:" + hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(imageConfig(img, layerDigest))
	if err != nil {
		return err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config": configName, "RepoTags": img.Tags, "Layers": []string{layerName},
	}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{{layerName, layer}, {configName, config}, {"manifest.json", manifest}} {
		if err := writeTarFile(tw, f.name, f.data, 0o644, 0, img.Created); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerTar is the image's one layer: the binary, mode 0755, owned by
// root so that the user it runs as cannot change it; /etc/passwd and
// /etc/group naming that user (for tools that look the user up); and /tmp,
// writable by anyone, for -ready-file and -audit-report.
func layerTar(img image) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	id := strconv.Itoa(uid)
	for _, d := range []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"tmp/", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: img.Created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		data []byte
		mode int64
	}{
		{"etc/group", []byte("root:x:0:\nvastfake:x:" + id + ":\n"), 0o644},
		{"etc/passwd", []byte("root:x:0:0:root:/:/sbin/nologin\nvastfake:x:" + id + ":" + id + ":vastfake:/tmp:/sbin/nologin\n"), 0o644},
		{strings.TrimPrefix(binaryPath, "/"), img.Binary, 0o755},
	}
	for _, f := range files {
		if err := writeTarFile(tw, f.name, f.data, f.mode, 0, img.Created); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTarFile writes one regular file to tw.
func writeTarFile(tw *tar.Writer, name string, data []byte, mode int64, owner int, mtime time.Time) error {
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: mode,
		Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// imageConfig is the image's configuration, as the OCI image spec's
// config (which docker-archive carries as is): the entrypoint, the user,
// the environment, the exposed ports and the labels, with the layer's
// digest as its one diff id.
func imageConfig(img image, layerDigest string) map[string]any {
	created := img.Created.Format(time.RFC3339)
	labels := map[string]string{
		"org.opencontainers.image.title":       "vastfake",
		"org.opencontainers.image.description": "An in-memory Kafka broker for tests that behaves like VAST Event Broker 5.5",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     img.Version,
		"org.opencontainers.image.revision":    img.Revision,
		"org.opencontainers.image.created":     created,
	}
	return map[string]any{
		"architecture": img.Arch,
		"os":           "linux",
		"created":      created,
		"config": map[string]any{
			"User":       strconv.Itoa(uid) + ":" + strconv.Itoa(uid),
			"Env":        img.Env(),
			"Entrypoint": []string{binaryPath},
			"WorkingDir": "/tmp",
			"ExposedPorts": map[string]struct{}{
				strconv.Itoa(KafkaPort) + "/tcp": {},
				strconv.Itoa(HTTPPort) + "/tcp":  {},
			},
			"Labels":     labels,
			"StopSignal": "SIGTERM",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		"history": []map[string]any{{
			"created":    created,
			"created_by": "go run ./cmd/vastimage",
			"comment":    "vastfake " + img.Version,
		}},
	}
}
