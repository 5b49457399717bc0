package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readTar returns the regular files of a tar and their headers.
func readTar(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files, headers := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, headers
		}
		require.NoError(t, err)
		headers[h.Name] = h
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = data
	}
}

// TestArchive reads an image back as docker load does: manifest.json names
// the config and the layer with both tags, the config's diff id is the
// layer's digest, and the config runs the binary (mode 0755, owned by
// root) as a non-root user with the container defaults, the exposed ports
// and the OCI labels. Two writes of one image are the same bytes.
func TestArchive(t *testing.T) {
	t.Parallel()
	img := image{Binary: []byte("\x7fELF not really"), Arch: "arm64", Version: "1.2.3", Revision: "abc123",
		Created: time.Unix(1700000000, 0).UTC(), Tags: []string{"vastfake:1.2.3", "vastfake:latest"}}
	var buf bytes.Buffer
	require.NoError(t, writeArchive(&buf, img))
	var again bytes.Buffer
	require.NoError(t, writeArchive(&again, img))
	assert.Equal(t, buf.Bytes(), again.Bytes(), "reproducible")

	files, _ := readTar(t, bytes.NewReader(buf.Bytes()))
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	require.NoError(t, json.Unmarshal(files["manifest.json"], &manifest))
	require.Len(t, manifest, 1)
	m := manifest[0]
	assert.Equal(t, img.Tags, m.RepoTags)
	require.Len(t, m.Layers, 1)

	var config struct {
		Architecture, OS string
		Config           struct {
			User         string
			Env          []string
			Entrypoint   []string
			ExposedPorts map[string]struct{}
			Labels       map[string]string
		}
		RootFS struct {
			Type    string
			DiffIDs []string `json:"diff_ids"`
		}
	}
	require.NoError(t, json.Unmarshal(files[m.Config], &config))
	configSum := sha256.Sum256(files[m.Config])
	assert.Equal(t, hex.EncodeToString(configSum[:])+".json", m.Config, "the config is named by its digest")
	layer := files[m.Layers[0]]
	layerSum := sha256.Sum256(layer)
	assert.Equal(t, []string{"sha256:" + hex.EncodeToString(layerSum[:])}, config.RootFS.DiffIDs)
	assert.Equal(t, "layers", config.RootFS.Type)
	assert.Equal(t, "arm64", config.Architecture)
	assert.Equal(t, "linux", config.OS)
	assert.Equal(t, "65532:65532", config.Config.User)
	assert.Equal(t, []string{"/vastfake"}, config.Config.Entrypoint)
	assert.Equal(t, []string{"VASTFAKE_LISTEN=0.0.0.0:9092", "VASTFAKE_HTTP=0.0.0.0:8080"}, config.Config.Env)
	assert.Equal(t, map[string]struct{}{"9092/tcp": {}, "8080/tcp": {}}, config.Config.ExposedPorts)
	assert.Equal(t, source, config.Config.Labels["org.opencontainers.image.source"])
	assert.Equal(t, "1.2.3", config.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, "abc123", config.Config.Labels["org.opencontainers.image.revision"])
	assert.Equal(t, "2023-11-14T22:13:20Z", config.Config.Labels["org.opencontainers.image.created"])

	inLayer, headers := readTar(t, bytes.NewReader(layer))
	assert.Equal(t, img.Binary, inLayer["vastfake"])
	assert.Equal(t, int64(0o755), headers["vastfake"].Mode)
	assert.Equal(t, 0, headers["vastfake"].Uid, "owned by root: the user it runs as cannot change it")
	assert.Equal(t, int64(0o1777), headers["tmp/"].Mode)
	assert.Contains(t, string(inLayer["etc/passwd"]), "vastfake:x:65532:65532:")
	var names []string
	for name := range headers {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"etc/", "tmp/", "etc/group", "etc/passwd", "vastfake"}, names, "nothing else: no shell")
}

// TestRunWritesTheFile: -o writes the archive with the version given and
// the latest tag; a bad -version or no -o is refused.
func TestRunWritesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.WriteFile(bin, []byte("binary"), 0o755))
	out := filepath.Join(dir, "image.tar")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run([]string{"-o", out, "-binary", bin, "-version", "9.9.9"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "vastfake:9.9.9, vastfake:latest")
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	files, _ := readTar(t, f)
	assert.Contains(t, string(files["manifest.json"]), `"vastfake:9.9.9"`)

	stdout.Reset()
	require.NoError(t, run([]string{"-o", out, "-binary", bin, "-version", "mine", "-latest=false"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), ": vastfake:mine\n", "no latest tag")

	assert.ErrorContains(t, run([]string{"-o", out, "-binary", bin, "-version", "-bad"}, &stdout, &stderr), "not a valid image tag")
	assert.ErrorContains(t, run([]string{"-binary", bin}, &stdout, &stderr), "want -o FILE")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "no temporary file left: %s", e.Name())
	}
}
