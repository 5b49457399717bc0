package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pyproject is what a wheel's metadata takes from python/pyproject.toml.
type pyproject struct {
	name, version, description, requiresPython string
	classifiers                                []string
	// readme is the file, beside pyproject.toml, whose text is the
	// package's page on PyPI (METADATA's body).
	readme string
	// urls are the [project.urls], "Label, URL" as METADATA's Project-URL.
	urls []string
	// entryPoints maps a group (pytest11) to its name = object lines.
	entryPoints map[string][]string
	packages    []string
}

// readPyproject reads the fields a wheel needs from pyproject.toml. It
// understands the subset of TOML the file uses (sections, and keys whose
// value is a string or a one-line array of strings) and refuses anything
// else in the sections it reads, so that a field added there is not left
// out of the wheel unnoticed.
func readPyproject(file string) (pyproject, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return pyproject{}, err
	}
	p := pyproject{entryPoints: map[string][]string{}}
	section := ""
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", file, n+1)
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[] ")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return p, fmt.Errorf("%s: not key = value", where)
		}
		key, value = strings.Trim(strings.TrimSpace(key), `"`), strings.TrimSpace(value)
		str := func() (string, error) {
			s, err := strconv.Unquote(value)
			if err != nil {
				return "", fmt.Errorf("%s: %s is not a string", where, key)
			}
			return s, nil
		}
		strs := func() ([]string, error) {
			if !strings.HasPrefix(value, "[") || !strings.HasSuffix(value, "]") {
				return nil, fmt.Errorf("%s: %s is not a one-line array", where, key)
			}
			var out []string
			for _, item := range strings.Split(strings.Trim(value, "[]"), ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				s, err := strconv.Unquote(item)
				if err != nil {
					return nil, fmt.Errorf("%s: %s holds %s, not a string", where, key, item)
				}
				out = append(out, s)
			}
			return out, nil
		}
		switch {
		case section == "project":
			switch key {
			case "name":
				p.name, err = str()
			case "version":
				p.version, err = str()
			case "description":
				p.description, err = str()
			case "requires-python":
				p.requiresPython, err = str()
			case "classifiers":
				p.classifiers, err = strs()
			case "readme":
				p.readme, err = str()
			default:
				err = fmt.Errorf("%s: vastdist does not know [project] %s; teach wheel.go to put it in the wheel's METADATA", where, key)
			}
		case section == "project.urls":
			var url string
			url, err = str()
			p.urls = append(p.urls, strings.Trim(key, `"`)+", "+url)
		case strings.HasPrefix(section, "project.entry-points."):
			group := strings.Trim(strings.TrimPrefix(section, "project.entry-points."), `"`)
			var obj string
			obj, err = str()
			p.entryPoints[group] = append(p.entryPoints[group], key+" = "+obj)
		case section == "tool.setuptools" && key == "packages":
			p.packages, err = strs()
		case section == "build-system", section == "tool.setuptools.package-data":
			// The source build's business; a wheel takes every file of the package.
		default:
			err = fmt.Errorf("%s: vastdist does not know [%s] %s; teach wheel.go what it means for a wheel", where, section, key)
		}
		if err != nil {
			return p, err
		}
	}
	if p.name == "" || p.version == "" || len(p.packages) == 0 {
		return p, fmt.Errorf("%s: want [project] name and version and [tool.setuptools] packages", file)
	}
	return p, nil
}

// wheelName is the distribution name as a wheel's file name spells it.
func wheelName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, strings.ToLower(name))
}

// zipTime is every entry's modification time, so that a wheel is the same
// bytes for the same inputs: SOURCE_DATE_EPOCH when set, else the earliest
// time a zip can hold.
func zipTime() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
}

// writeWheel writes the wheel of the package in src (python/) for p, its
// binary at vastfake/bin/vastfake (.exe on Windows) with mode 0755, which
// pip keeps, and returns its path. The format is PEP 427's: the package's
// files, then a .dist-info with METADATA, WHEEL, entry_points.txt and a
// RECORD of every file's SHA-256.
// versionLine is a package's __version__ assignment.
var versionLine = regexp.MustCompile(`(?m)^__version__ = "[^"]*"`)

func writeWheel(dir, src string, proj pyproject, p platform, binary []byte) (string, error) {
	type entry struct {
		name string
		mode fs.FileMode
		data []byte
	}
	var entries []entry
	for _, pkg := range proj.packages {
		root := filepath.Join(src, filepath.FromSlash(pkg))
		err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "__pycache__" || (file != root && strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".pyc") || strings.HasPrefix(d.Name(), ".") {
				return nil
			}
			rel, err := filepath.Rel(src, file)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if d.Name() == "__init__.py" {
				// The package's __version__ is the wheel's (vastdist -version).
				data = versionLine.ReplaceAll(data, []byte(`__version__ = "`+proj.version+`"`))
			}
			entries = append(entries, entry{filepath.ToSlash(rel), 0o644, data})
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	entries = append(entries, entry{proj.packages[0] + "/bin/" + p.exe(), 0o755, binary})

	distInfo := wheelName(proj.name) + "-" + proj.version + ".dist-info"
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", proj.name, proj.version)
	if proj.description != "" {
		fmt.Fprintf(&meta, "Summary: %s\n", proj.description)
	}
	if proj.requiresPython != "" {
		fmt.Fprintf(&meta, "Requires-Python: %s\n", proj.requiresPython)
	}
	for _, c := range proj.classifiers {
		fmt.Fprintf(&meta, "Classifier: %s\n", c)
	}
	for _, u := range proj.urls {
		fmt.Fprintf(&meta, "Project-URL: %s\n", u)
	}
	if proj.readme != "" {
		// PyPI renders the body (PEP 566); twine check, which the release
		// runs before uploading, fails a wheel without one.
		text, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(proj.readme)))
		if err != nil {
			return "", fmt.Errorf("pyproject.toml readme: %w", err)
		}
		if !strings.HasSuffix(proj.readme, ".md") {
			return "", fmt.Errorf("pyproject.toml readme %s: vastdist writes Markdown (.md) only", proj.readme)
		}
		fmt.Fprintf(&meta, "Description-Content-Type: text/markdown\n\n%s", text)
	}
	entries = append(entries, entry{distInfo + "/METADATA", 0o644, []byte(meta.String())})

	var wheel strings.Builder
	wheel.WriteString("Wheel-Version: 1.0\nGenerator: vastdist\nRoot-Is-Purelib: false\n")
	for _, tag := range p.wheelTags {
		fmt.Fprintf(&wheel, "Tag: py3-none-%s\n", tag)
	}
	entries = append(entries, entry{distInfo + "/WHEEL", 0o644, []byte(wheel.String())})

	if len(proj.entryPoints) > 0 {
		var ep strings.Builder
		groups := make([]string, 0, len(proj.entryPoints))
		for g := range proj.entryPoints {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		for _, g := range groups {
			fmt.Fprintf(&ep, "[%s]\n%s\n\n", g, strings.Join(proj.entryPoints[g], "\n"))
		}
		entries = append(entries, entry{distInfo + "/entry_points.txt", 0o644, []byte(ep.String())})
	}

	var record strings.Builder
	for _, e := range entries {
		sum := sha256.Sum256(e.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", e.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(e.data))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", distInfo)
	entries = append(entries, entry{distInfo + "/RECORD", 0o644, []byte(record.String())})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	mtime := zipTime()
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(e.data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%s-py3-none-%s.whl", wheelName(proj.name), proj.version, strings.Join(p.wheelTags, "."))
	out := filepath.Join(dir, name)
	return out, os.WriteFile(out, buf.Bytes(), 0o644)
}
