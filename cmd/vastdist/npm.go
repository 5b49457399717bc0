package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// packageJSON is a package.json with its fields in the file's order, so
// that the main package's reads as js/package.json does.
type packageJSON struct {
	fields  []jsonField
	version string
	files   []string
}

type jsonField struct {
	key   string
	value json.RawMessage
}

func readPackageJSON(file string) (packageJSON, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return packageJSON{}, err
	}
	var pkg packageJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return pkg, fmt.Errorf("%s: not a JSON object", file)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return pkg, fmt.Errorf("%s: %w", file, err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return pkg, fmt.Errorf("%s: %w", file, err)
		}
		key := tok.(string)
		pkg.fields = append(pkg.fields, jsonField{key, value})
		switch key {
		case "version":
			err = json.Unmarshal(value, &pkg.version)
		case "files":
			err = json.Unmarshal(value, &pkg.files)
		}
		if err != nil {
			return pkg, fmt.Errorf("%s: %s: %w", file, key, err)
		}
	}
	if pkg.version == "" || len(pkg.files) == 0 {
		return pkg, fmt.Errorf("%s: want a version and files", file)
	}
	return pkg, nil
}

func (pkg packageJSON) get(key string) json.RawMessage {
	for _, f := range pkg.fields {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

// setRepository sets pkg's repository field to the Git repository at url
// (https://github.com/OWNER/NAME), the package being its js/ directory; the
// platform and offline packages copy it. npm publish --provenance refuses,
// with E422, a package whose repository.url is not the repository the
// publishing workflow ran in.
func (pkg *packageJSON) setRepository(url string) error {
	url = strings.TrimSuffix(strings.TrimSuffix(url, "/"), ".git")
	if !strings.HasPrefix(url, "https://") || strings.Count(strings.TrimPrefix(url, "https://"), "/") != 2 {
		return fmt.Errorf("-repository %q: want https://HOST/OWNER/NAME", url)
	}
	value := raw(map[string]string{"type": "git", "url": "git+" + url + ".git", "directory": "js"})
	for i, f := range pkg.fields {
		if f.key == "repository" {
			pkg.fields[i].value = value
			return nil
		}
	}
	pkg.fields = append(pkg.fields, jsonField{"repository", value})
	return nil
}

// encode writes fields as an indented JSON object, in order, with no
// newline at its end.
func encode(fields []jsonField) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, f := range fields {
		key, _ := json.Marshal(f.key)
		var value bytes.Buffer
		if err := json.Indent(&value, f.value, "  ", "  "); err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		fmt.Fprintf(&buf, "  %s: %s", key, value.Bytes())
		if i < len(fields)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("}")
	return buf.Bytes(), nil
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings, maps and slices of them come here
	}
	return b
}

// Fields the platform packages copy from the main one when it has them.
var sharedFields = []string{"license", "author", "homepage", "repository", "bugs", "engines"}

// writePlatformPackage writes the npm package carrying p's binary, in
// bin/, to dir/vastfake-OS-CPU and returns that directory. Its os and cpu
// fields make npm install it only on p, so the main package can list every
// platform's as an optional dependency.
func writePlatformPackage(dir string, pkg packageJSON, p platform, version string, binary []byte) (string, error) {
	out := filepath.Join(dir, p.npmDir())
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return "", err
	}
	what := map[string]string{"linux": "Linux", "darwin": "macOS", "win32": "Windows"}[p.npmOS] + " on " + p.npmCPU
	fields := []jsonField{
		{"name", raw(p.npmName())},
		{"version", raw(version)},
		{"description", raw("The vastfake binary for " + what + "; the vastfake package installs and runs it")},
		{"os", raw([]string{p.npmOS})},
		{"cpu", raw([]string{p.npmCPU})},
		{"files", raw([]string{"bin/" + p.exe()})},
		// Yarn's Plug'n'Play must unpack it to run it.
		{"preferUnplugged", raw(true)},
	}
	for _, key := range sharedFields {
		if v := pkg.get(key); v != nil {
			fields = append(fields, jsonField{key, v})
		}
	}
	data, err := encode(fields)
	if err != nil {
		return "", err
	}
	readme := fmt.Sprintf("# %s\n\nThe vastfake binary (an in-memory Kafka broker that behaves like VAST Event Broker 5.5) for %s.\n"+
		"Install `vastfake` instead: it lists this package as an optional dependency, npm installs the one for\n"+
		"the machine it runs on, and `startBroker()` runs its binary.\n", p.npmName(), what)
	for name, content := range map[string][]byte{"package.json": append(data, '\n'), "README.md": []byte(readme)} {
		if err := os.WriteFile(filepath.Join(out, name), content, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(out, "bin", p.exe()), binary, 0o755); err != nil {
		return "", err
	}
	// WriteFile keeps the mode of a file that was there; make sure.
	return out, os.Chmod(filepath.Join(out, "bin", p.exe()), 0o755)
}

// writeMainPackage writes the vastfake npm package to dir/vastfake: the
// files js/package.json lists, and a package.json that is js/'s without
// its scripts and devDependencies, at version, with the platform packages
// of chosen as optional dependencies.
func writeMainPackage(dir, src string, pkg packageJSON, version string, chosen []platform) (string, error) {
	out := filepath.Join(dir, "vastfake")
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	optional := []jsonField{}
	for _, p := range chosen {
		optional = append(optional, jsonField{p.npmName(), raw(version)})
	}
	optionalJSON, err := encode(optional)
	if err != nil {
		return "", err
	}
	var fields []jsonField
	for _, f := range pkg.fields {
		switch f.key {
		case "scripts", "devDependencies", "optionalDependencies":
			continue
		case "version":
			f.value = raw(version)
		}
		fields = append(fields, f)
	}
	fields = append(fields, jsonField{"optionalDependencies", optionalJSON})
	data, err := encode(fields)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "package.json"), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	for _, name := range pkg.files {
		if err := copyTree(filepath.Join(src, filepath.FromSlash(name)), filepath.Join(out, filepath.FromSlash(name))); err != nil {
			return "", fmt.Errorf("js/package.json files: %w", err)
		}
	}
	for _, name := range []string{"README.md", "LICENSE"} {
		if err := copyTree(filepath.Join(src, name), filepath.Join(out, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return out, nil
}

// copyTree copies the file or directory from to to, keeping executable bits.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, file)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			if d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && file != from {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm()|0o644)
	})
}

// writeOfflinePackage writes, to dir/vastfake-OFFLINE-OS-CPU, the vastfake
// package for one platform with its binary inside (bin/), as the main
// package is but with no optional dependencies: a project installs it from
// its tarball alone, and its lock file then names only that tarball, so
// that npm ci installs it again offline. Its os and cpu fields make npm
// refuse it elsewhere.
func writeOfflinePackage(dir, src string, pkg packageJSON, version string, p platform, binary []byte) (string, error) {
	main, err := writeMainPackage(dir, src, pkg, version, nil)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "vastfake-offline-"+p.npmOS+"-"+p.npmCPU)
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	if err := os.Rename(main, out); err != nil {
		return "", err
	}
	var fields []jsonField
	for _, f := range pkg.fields {
		switch f.key {
		case "scripts", "devDependencies", "optionalDependencies":
			continue
		case "version":
			f.value = raw(version)
		case "files":
			f.value = raw(append(append([]string{}, pkg.files...), "bin/"+p.exe()))
		}
		fields = append(fields, f)
		if f.key == "version" {
			fields = append(fields, jsonField{"os", raw([]string{p.npmOS})}, jsonField{"cpu", raw([]string{p.npmCPU})})
		}
	}
	data, err := encode(fields)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "package.json"), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "bin", p.exe()), binary, 0o755); err != nil {
		return "", err
	}
	return out, os.Chmod(filepath.Join(out, "bin", p.exe()), 0o755)
}

// npmPackTime is the time npm pack gives every file of a tarball, which
// this one gives them too unless SOURCE_DATE_EPOCH sets another: two packs
// of the same files are then the same bytes.
var npmPackTime = time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)

// packTarball writes the package in dir to file as npm pack does: a
// gzipped tar whose entries are package/ and the path, files only, in
// sorted order, with their modes (0755 for executables, else 0644).
func packTarball(dir, file string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	mtime := npmPackTime
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		mtime = time.Unix(s, 0).UTC()
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if info.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: mode, Size: int64(len(data)),
			ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// tarballName is the file name npm pack gives a package: its name without
// the scope's @ and with / as -, then its version.
func tarballName(name, version string) string {
	return strings.ReplaceAll(strings.TrimPrefix(name, "@"), "/", "-") + "-" + version + ".tgz"
}
