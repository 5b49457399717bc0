package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The repository's own files: vastdist reads every field of pyproject.toml
// it finds (a new one fails here until wheel.go knows it), and the Python
// and npm packages share a version.
func TestReadsTheRepositorysPackages(t *testing.T) {
	t.Parallel()
	proj, err := readPyproject("../../python/pyproject.toml")
	require.NoError(t, err)
	require.Equal(t, "vastfake", proj.name)
	require.Equal(t, []string{"vastfake"}, proj.packages)
	require.Equal(t, []string{"vastfake.pytest_plugin = vastfake.pytest_plugin"}, proj.entryPoints["pytest11"])
	pkg, err := readPackageJSON("../../js/package.json")
	require.NoError(t, err)
	require.Equal(t, proj.version, pkg.version, "js/package.json and python/pyproject.toml")
	init, err := os.ReadFile("../../python/vastfake/__init__.py")
	require.NoError(t, err)
	require.Contains(t, string(init), "\n__version__ = \""+proj.version+"\"\n", "python/vastfake/__init__.py and python/pyproject.toml")
}

func TestPyprojectRefusesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "pyproject.toml")
	require.NoError(t, os.WriteFile(file, []byte("[project]\nname = \"x\"\nversion = \"1\"\ndependencies = [\"requests\"]\n"), 0o644))
	_, err := readPyproject(file)
	require.ErrorContains(t, err, "does not know [project] dependencies")
}

// The wheel is what pip wants (PEP 427): every file in RECORD with its
// SHA-256 and size, the binary executable, the tags in WHEEL and the name.
func TestWheel(t *testing.T) {
	t.Parallel()
	proj, err := readPyproject("../../python/pyproject.toml")
	require.NoError(t, err)
	proj.version = "9.8.7"
	binary := []byte("\x7fELF not really")
	for _, p := range platforms {
		t.Run(p.String(), func(t *testing.T) {
			file, err := writeWheel(t.TempDir(), "../../python", proj, p, binary)
			require.NoError(t, err)
			require.Equal(t, "vastfake-9.8.7-py3-none-"+strings.Join(p.wheelTags, ".")+".whl", filepath.Base(file))
			z, err := zip.OpenReader(file)
			require.NoError(t, err)
			defer z.Close()
			files := map[string][]byte{}
			for _, f := range z.File {
				r, err := f.Open()
				require.NoError(t, err)
				data, err := io.ReadAll(r)
				require.NoError(t, err)
				files[f.Name] = data
				if f.Name == "vastfake/bin/"+p.exe() {
					require.Equal(t, os.FileMode(0o755), f.Mode().Perm())
					require.Equal(t, binary, data)
				}
			}
			require.Contains(t, files, "vastfake/__init__.py")
			require.Contains(t, string(files["vastfake/__init__.py"]), "\n__version__ = \"9.8.7\"\n", "the version stamped in")
			require.Contains(t, files, "vastfake/py.typed")
			require.Contains(t, files, "vastfake/bin/"+p.exe())
			wheel := string(files["vastfake-9.8.7.dist-info/WHEEL"])
			require.Contains(t, wheel, "Root-Is-Purelib: false\n")
			for _, tag := range p.wheelTags {
				require.Contains(t, wheel, "Tag: py3-none-"+tag+"\n")
			}
			meta := string(files["vastfake-9.8.7.dist-info/METADATA"])
			require.Contains(t, meta, "Name: vastfake\nVersion: 9.8.7\n")
			require.Contains(t, meta, "Project-URL: Homepage, https://github.com/vastfake/vastfake\n")
			// PyPI's page: python/README.md, the body, which twine check wants.
			readme, err := os.ReadFile("../../python/README.md")
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(meta, "Description-Content-Type: text/markdown\n\n"+string(readme)), meta)
			lines := strings.Split(strings.TrimSpace(string(files["vastfake-9.8.7.dist-info/RECORD"])), "\n")
			require.Len(t, lines, len(files))
			for _, line := range lines {
				fields := strings.Split(line, ",")
				require.Len(t, fields, 3, line)
				data, ok := files[fields[0]]
				require.True(t, ok, "RECORD names %s, which the wheel lacks", fields[0])
				if fields[0] == "vastfake-9.8.7.dist-info/RECORD" {
					require.Equal(t, []string{fields[0], "", ""}, fields)
					continue
				}
				sum := sha256.Sum256(data)
				require.Equal(t, "sha256="+base64.RawURLEncoding.EncodeToString(sum[:]), fields[1], fields[0])
				require.Equal(t, strconv.Itoa(len(data)), fields[2], fields[0])
			}
		})
	}
}

// The npm packages: a platform package per platform with os, cpu and its
// executable binary; the main one js/'s files and package.json, less what
// only the checkout needs, listing the platform packages.
func TestNPMPackages(t *testing.T) {
	t.Parallel()
	pkg, err := readPackageJSON("../../js/package.json")
	require.NoError(t, err)
	dir := t.TempDir()
	for _, p := range platforms {
		out, err := writePlatformPackage(dir, pkg, p, "9.8.7", []byte("binary"))
		require.NoError(t, err)
		var got struct {
			Name, Version string
			OS, CPU       []string
			Files         []string
		}
		data, err := os.ReadFile(filepath.Join(out, "package.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &got))
		require.Equal(t, p.npmName(), got.Name)
		require.Equal(t, "9.8.7", got.Version)
		require.Equal(t, []string{p.npmOS}, got.OS)
		require.Equal(t, []string{p.npmCPU}, got.CPU)
		require.Equal(t, []string{"bin/" + p.exe()}, got.Files)
		info, err := os.Stat(filepath.Join(out, "bin", p.exe()))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	}
	out, err := writeMainPackage(dir, "../../js", pkg, "9.8.7", platforms)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(out, "package.json"))
	require.NoError(t, err)
	var main map[string]any
	require.NoError(t, json.Unmarshal(data, &main))
	require.Equal(t, "vastfake", main["name"])
	require.Equal(t, "9.8.7", main["version"])
	require.NotContains(t, main, "devDependencies")
	require.NotContains(t, main, "scripts")
	require.Equal(t, map[string]any{
		"@vastfake/linux-x64": "9.8.7", "@vastfake/linux-arm64": "9.8.7", "@vastfake/darwin-x64": "9.8.7",
		"@vastfake/darwin-arm64": "9.8.7", "@vastfake/win32-x64": "9.8.7",
	}, main["optionalDependencies"])
	for _, f := range pkg.files {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, "js/package.json's files are in the package")
	}
	require.FileExists(t, filepath.Join(out, "lib", "client.js"))
	require.FileExists(t, filepath.Join(out, "README.md"), "js/README.md, the package's page on npm")
}

// js/lib/binary.js looks for the platform packages vastdist builds.
func TestTheLauncherKnowsEveryPlatformPackage(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../js/lib/binary.js")
	require.NoError(t, err)
	_, list, ok := strings.Cut(string(src), "const PLATFORM_PACKAGES = ")
	require.True(t, ok, "js/lib/binary.js has no PLATFORM_PACKAGES")
	list, _, _ = strings.Cut(list, "\n")
	var want []string
	for _, p := range platforms {
		want = append(want, "'"+p.npmOS+"-"+p.npmCPU+"'")
	}
	require.Equal(t, "["+strings.Join(want, ", ")+"]", list)
}

func TestChoose(t *testing.T) {
	t.Parallel()
	all, err := choose("all")
	require.NoError(t, err)
	require.Len(t, all, 5)
	two, err := choose("windows/amd64,linux/arm64")
	require.NoError(t, err)
	require.Equal(t, []string{"linux/arm64", "windows/amd64"}, []string{two[0].String(), two[1].String()})
	_, err = choose("plan9/386")
	require.ErrorContains(t, err, `no platform "plan9/386"`)
}

// The offline package of each platform, as a tarball: npm pack's layout
// (package/...), the binary executable inside, os and cpu fields, and no
// optional dependencies, so that a lock file names the tarball alone.
func TestOfflineTarballs(t *testing.T) {
	pkg, err := readPackageJSON("../../js/package.json")
	require.NoError(t, err)
	for _, p := range platforms {
		dir := t.TempDir()
		out, err := writeOfflinePackage(dir, "../../js", pkg, "9.8.7", p, []byte("binary"))
		require.NoError(t, err)
		file := filepath.Join(dir, "offline.tgz")
		require.NoError(t, packTarball(out, file))
		entries := readTarball(t, file)
		bin, ok := entries["package/bin/"+p.exe()]
		require.True(t, ok, "the binary is inside")
		require.Equal(t, int64(0o755), bin.mode)
		require.Equal(t, int64(0o644), entries["package/lib/client.js"].mode)
		var got struct {
			Name, Version string
			OS, CPU       []string
			Files         []string
			Optional      map[string]string `json:"optionalDependencies"`
		}
		require.NoError(t, json.Unmarshal(entries["package/package.json"].data, &got))
		require.Equal(t, "vastfake", got.Name)
		require.Equal(t, "9.8.7", got.Version)
		require.Equal(t, []string{p.npmOS}, got.OS)
		require.Equal(t, []string{p.npmCPU}, got.CPU)
		require.Contains(t, got.Files, "bin/"+p.exe())
		require.Empty(t, got.Optional)
	}
	require.Equal(t, "vastfake-linux-x64-1.2.3.tgz", tarballName("@vastfake/linux-x64", "1.2.3"))
	require.Equal(t, "vastfake-1.2.3.tgz", tarballName("vastfake", "1.2.3"))
}

type tarEntry struct {
	mode int64
	data []byte
}

func readTarball(t *testing.T, file string) map[string]tarEntry {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	entries := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		entries[h.Name] = tarEntry{h.Mode, data}
	}
	return entries
}

// SHA256SUMS names every file vastdist wrote, as sha256sum -c reads it.
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"bin/vastfake-1-linux-amd64": "b", "python/x.whl": "w", "npm/offline/y.tgz": "o"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	file, err := writeChecksums(dir)
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return fmt.Sprintf("%x", h) }
	require.Equal(t, sum("b")+"  bin/vastfake-1-linux-amd64\n"+sum("o")+"  npm/offline/y.tgz\n"+sum("w")+"  python/x.whl\n", string(got))
}

// Every npm package names the repository it was built from, as npm publish
// --provenance wants (it refuses, with E422, a package whose repository.url
// is not the repository the release ran in): js/package.json's, or the one
// -repository gives, which the release workflow sets to its own.
func TestNPMPackagesNameTheirRepository(t *testing.T) {
	t.Parallel()
	pkg, err := readPackageJSON("../../js/package.json")
	require.NoError(t, err)
	var own struct{ URL string }
	require.NoError(t, json.Unmarshal(pkg.get("repository"), &own), "js/package.json has a repository")
	require.Equal(t, "git+https://github.com/vastfake/vastfake.git", own.URL, "the module's path")

	require.ErrorContains(t, pkg.setRepository("github.com/someone/fork"), "want https://HOST/OWNER/NAME")
	require.NoError(t, pkg.setRepository("https://github.com/someone/fork.git"))
	p := platforms[0]
	dir := t.TempDir()
	platform, err := writePlatformPackage(dir, pkg, p, "9.8.7", []byte("binary"))
	require.NoError(t, err)
	offline, err := writeOfflinePackage(dir, "../../js", pkg, "9.8.7", p, []byte("binary"))
	require.NoError(t, err)
	main, err := writeMainPackage(dir, "../../js", pkg, "9.8.7", platforms)
	require.NoError(t, err)
	for _, out := range []string{platform, offline, main} {
		data, err := os.ReadFile(filepath.Join(out, "package.json"))
		require.NoError(t, err)
		var got struct{ Repository struct{ URL string } }
		require.NoError(t, json.Unmarshal(data, &got))
		require.Equal(t, "git+https://github.com/someone/fork.git", got.Repository.URL, out)
	}

	workflow, err := os.ReadFile("../../.github/workflows/release.yml")
	require.NoError(t, err)
	require.Contains(t, string(workflow), `-repository "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY"`,
		"the release names its own repository in the npm packages")
}
