// Command vastdist builds the Python wheels and npm packages that carry the
// vastfake binary, so that Python and JavaScript users need no Go toolchain:
// one static binary (CGO_ENABLED=0) per platform Go cross-compiles to, put in
// a platform wheel of the python/ package and in an npm package of its own
// (@vastfake/linux-x64 and so on, with os and cpu fields), which the main
// vastfake npm package lists as optional dependencies, as esbuild does; and,
// for installs without a registry, one vastfake npm package per platform
// with the binary inside.
//
//	go run ./cmd/vastdist -o dist                        # every platform: minutes
//	go run ./cmd/vastdist -o dist -platforms host        # this machine's only: the quick path
//	go run ./cmd/vastdist -o dist -platforms linux/amd64,darwin/arm64
//
// It writes, under the -o directory:
//
//	python/vastfake-VERSION-py3-none-TAGS.whl    a wheel per platform
//	npm/vastfake-VERSION.tgz                     the main package (js/), listing the platform packages built with it
//	npm/vastfake-linux-x64-VERSION.tgz ...       a platform package per platform, its binary in bin/
//	npm/offline/vastfake-VERSION-linux-x64.tgz   the main package with the binary inside, per platform, for offline installs
//	bin/vastfake-VERSION-linux-amd64 ...          the binary itself, per platform (.exe on Windows)
//	SHA256SUMS                                   every file above with its SHA-256, as sha256sum -c reads them
//
// The tarballs are what npm pack writes, ready for npm publish (the
// platform packages first) or npm install. The version is js/package.json's,
// which must equal python/pyproject.toml's, unless -version gives one; the
// npm packages' repository is js/package.json's, unless -repository gives
// one (npm publish --provenance wants the repository the release ran in).
// Run
// it in the vastfake checkout (or below it). Each platform's build takes
// about a minute and a half on a 2-core machine the first time (Go then
// caches it).
package main

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// moduleLine is the first line of the vastfake checkout's go.mod.
const moduleLine = "module github.com/vastfake/vastfake"

// A platform is one GOOS/GOARCH pair with its names in the wheel and npm
// worlds.
type platform struct {
	goos, goarch string
	// npmOS and npmCPU are Node's process.platform and process.arch, the
	// platform package's os and cpu fields and its name.
	npmOS, npmCPU string
	// wheelTags are the wheel's platform tags: the binary is static, so
	// it runs on every glibc (manylinux) and musl (musllinux) Linux;
	// macOS 12 is the oldest Go 1.26 supports.
	wheelTags []string
}

var platforms = []platform{
	{"linux", "amd64", "linux", "x64", []string{"manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"}},
	{"linux", "arm64", "linux", "arm64", []string{"manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"}},
	{"darwin", "amd64", "darwin", "x64", []string{"macosx_12_0_x86_64"}},
	{"darwin", "arm64", "darwin", "arm64", []string{"macosx_12_0_arm64"}},
	{"windows", "amd64", "win32", "x64", []string{"win_amd64"}},
}

func (p platform) String() string { return p.goos + "/" + p.goarch }

// exe is the binary's file name on the platform.
func (p platform) exe() string {
	if p.goos == "windows" {
		return "vastfake.exe"
	}
	return "vastfake"
}

// npmName is the platform package's name, npmDir its directory under npm/.
func (p platform) npmName() string { return "@vastfake/" + p.npmOS + "-" + p.npmCPU }
func (p platform) npmDir() string  { return "vastfake-" + p.npmOS + "-" + p.npmCPU }

func main() {
	out := flag.String("o", "", "the directory to write python/ and npm/ into (required)")
	only := flag.String("platforms", "all", "comma-separated GOOS/GOARCH pairs, \"host\" for this machine's, or \"all\": "+platformList())
	version := flag.String("version", "", "the packages' version; default js/package.json's, which must equal python/pyproject.toml's")
	binary := flag.String("binary", "", "use this vastfake binary instead of building one (with a single platform only)")
	repository := flag.String("repository", "", "the npm packages' repository, https://github.com/OWNER/NAME; default js/package.json's (npm publish --provenance refuses a package whose repository is not the one the release ran in)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/vastdist -o DIR [-platforms all|host|GOOS/GOARCH,...] [-version V] [-repository URL]")
		os.Exit(2)
	}
	if err := run(*out, *only, *version, *binary, *repository); err != nil {
		fmt.Fprintln(os.Stderr, "vastdist:", err)
		os.Exit(1)
	}
}

func platformList() string {
	var names []string
	for _, p := range platforms {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// choose returns the platforms a -platforms value names, in the table's
// order.
func choose(spec string) ([]platform, error) {
	if spec == "all" {
		return platforms, nil
	}
	want := map[string]bool{}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if s == "host" {
			s = runtime.GOOS + "/" + runtime.GOARCH
		}
		if !slices.ContainsFunc(platforms, func(p platform) bool { return p.String() == s }) {
			return nil, fmt.Errorf("-platforms: no platform %q; the platforms are %s", s, platformList())
		}
		want[s] = true
	}
	var chosen []platform
	for _, p := range platforms {
		if want[p.String()] {
			chosen = append(chosen, p)
		}
	}
	return chosen, nil
}

func run(out, only, version, binary, repository string) error {
	chosen, err := choose(only)
	if err != nil {
		return err
	}
	if binary != "" && len(chosen) != 1 {
		return errors.New("-binary needs -platforms to name one platform")
	}
	root, err := checkout()
	if err != nil {
		return err
	}
	project, err := readPyproject(filepath.Join(root, "python", "pyproject.toml"))
	if err != nil {
		return err
	}
	pkg, err := readPackageJSON(filepath.Join(root, "js", "package.json"))
	if err != nil {
		return err
	}
	if version == "" {
		if pkg.version != project.version {
			return fmt.Errorf("js/package.json has version %s but python/pyproject.toml %s: make them equal or give -version", pkg.version, project.version)
		}
		version = pkg.version
	}
	project.version = version
	if repository != "" {
		if err := pkg.setRepository(repository); err != nil {
			return err
		}
	}

	bins, err := os.MkdirTemp("", "vastdist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bins)
	staging := filepath.Join(bins, "npm")
	if err := os.MkdirAll(filepath.Join(out, "python"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "npm", "offline"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return err
	}
	start := time.Now()
	if binary == "" {
		fmt.Fprintf(os.Stderr, "vastdist: building vastfake for %d platform(s), about a minute and a half each on a 2-core machine the first time; -platforms host builds this machine's only\n", len(chosen))
	}
	for _, p := range chosen {
		bin := binary
		if bin == "" {
			bin = filepath.Join(bins, p.goos+"-"+p.goarch, p.exe())
			fmt.Fprintf(os.Stderr, "vastdist: building vastfake for %s\n", p)
			if err := build(root, p, version, bin); err != nil {
				return err
			}
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		raw := filepath.Join(out, "bin", "vastfake-"+version+"-"+p.goos+"-"+p.goarch+strings.TrimPrefix(p.exe(), "vastfake"))
		if err := os.WriteFile(raw, data, 0o755); err != nil {
			return err
		}
		fmt.Println(raw)
		whl, err := writeWheel(filepath.Join(out, "python"), filepath.Join(root, "python"), project, p, data)
		if err != nil {
			return fmt.Errorf("the wheel for %s: %w", p, err)
		}
		fmt.Println(whl)
		dir, err := writePlatformPackage(staging, pkg, p, version, data)
		if err != nil {
			return fmt.Errorf("the npm package for %s: %w", p, err)
		}
		tgz := filepath.Join(out, "npm", tarballName(p.npmName(), version))
		if err := packTarball(dir, tgz); err != nil {
			return fmt.Errorf("the npm package for %s: %w", p, err)
		}
		fmt.Println(tgz)
		dir, err = writeOfflinePackage(staging, filepath.Join(root, "js"), pkg, version, p, data)
		if err != nil {
			return fmt.Errorf("the offline npm package for %s: %w", p, err)
		}
		tgz = filepath.Join(out, "npm", "offline", "vastfake-"+version+"-"+p.npmOS+"-"+p.npmCPU+".tgz")
		if err := packTarball(dir, tgz); err != nil {
			return fmt.Errorf("the offline npm package for %s: %w", p, err)
		}
		fmt.Println(tgz)
	}
	dir, err := writeMainPackage(staging, filepath.Join(root, "js"), pkg, version, chosen)
	if err != nil {
		return fmt.Errorf("the main npm package: %w", err)
	}
	tgz := filepath.Join(out, "npm", tarballName("vastfake", version))
	if err := packTarball(dir, tgz); err != nil {
		return fmt.Errorf("the main npm package: %w", err)
	}
	fmt.Println(tgz)
	sums, err := writeChecksums(out)
	if err != nil {
		return err
	}
	fmt.Println(sums)
	fmt.Fprintf(os.Stderr, "vastdist: done in %v\n", time.Since(start).Round(time.Second))
	return nil
}

// writeChecksums writes dir/SHA256SUMS: every file under dir's bin,
// python and npm directories with its SHA-256, in the format sha256sum
// writes and checks (sha256sum -c SHA256SUMS, in dir).
func writeChecksums(dir string) (string, error) {
	var lines []string
	for _, sub := range []string{"bin", "python", "npm"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%x  %s", sha256.Sum256(data), filepath.ToSlash(rel)))
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] }) // by path, after the hash and two spaces
	file := filepath.Join(dir, "SHA256SUMS")
	return file, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// checkout returns the vastfake checkout the working directory is in.
func checkout() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			first := s.Scan() && strings.TrimSpace(s.Text()) == moduleLine
			f.Close()
			if first {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it in the vastfake checkout: no go.mod starting " + moduleLine + " here or above")
		}
		dir = parent
	}
}

// build writes a static vastfake binary for p to out: no cgo, so that it
// runs on any libc, with paths and symbol tables left out to make it
// smaller, and the packages' version (and the checkout's revision, when git
// knows it) stamped in for vastfake -version, as cmd/vastimage does.
func build(root string, p platform, version, out string) error {
	ldflags := "-s -w -X main.imageVersion=" + version
	if rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		ldflags += " -X main.imageRevision=" + strings.TrimSpace(string(rev))
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", out, "./cmd/vastfake")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.goos, "GOARCH="+p.goarch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/vastfake for %s: %w", p, err)
	}
	return nil
}
