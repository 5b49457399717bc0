package main

// The environment: every setting's variable, the singular variables of the
// repeatable flags, and a warning for any other VASTFAKE_ variable, which
// is most likely a misspelt one that would otherwise be ignored in silence.

import (
	"flag"
	"os"
	"sort"
	"strings"
)

// envName is the environment variable of a flag: VASTFAKE_ and the flag
// name in upper case with dashes as underscores. A repeatable flag's
// variables are in listNames.
func envName(flagName string) string {
	return "VASTFAKE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// launcherVariables are the VASTFAKE_ variables that the Python and
// JavaScript packages and the container helpers read, not the binary: a
// launcher's environment reaches the binary it starts, so they are no
// mistake there.
var launcherVariables = []string{"VASTFAKE_BIN", "VASTFAKE_SRC", "VASTFAKE_CACHE_DIR", "VASTFAKE_ARGS",
	"VASTFAKE_IMAGE", "VASTFAKE_URL", "VASTFAKE_DIST"}

// unknownVariable is a VASTFAKE_ variable that sets nothing, and the known
// variable nearest to its name when that one is near enough to be what was
// meant (else "").
type unknownVariable struct{ name, nearest string }

// readEnvironment sets every setting of fs from its environment variable,
// and returns each VASTFAKE_ variable of environ that sets nothing, with
// the nearest known variable.
func readEnvironment(fs *flag.FlagSet, environ []string) (unknown []unknownVariable) {
	known := map[string]bool{}
	for _, name := range launcherVariables {
		known[name] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		if commands[f.Name] {
			return // a command, not a setting
		}
		switch v := f.Value.(type) {
		case *listFlag:
			for _, name := range listNames[f.Name] {
				known[name] = true
				if s := os.Getenv(name); s != "" {
					v.env = append(v.env, v.items(s, fromEnv(name))...)
				}
			}
		case *value:
			name := envName(f.Name)
			known[name] = true
			if s, ok := os.LookupEnv(name); ok {
				v.text, v.from = s, fromEnv(name)
			}
		}
	})
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "VASTFAKE_") || known[name] || strings.HasPrefix(name, "VASTFAKE_TEST_") {
			continue
		}
		if len(name) > maxQuoted {
			name = name[:maxQuoted] + "…" // a name is ASCII, or no name of ours is near
		}
		unknown = append(unknown, unknownVariable{name, likelyMeant(name, names)})
	}
	return unknown
}

// likelyMeant returns the name in names nearest to s when it is near
// enough to be a misspelling of it: at most two edits, or a third of the
// part after VASTFAKE_ for a longer name. VASTFAKE_TOPICZ was meant as
// VASTFAKE_TOPIC; VASTFAKE_BOGUS was not meant as VASTFAKE_ARGS.
func likelyMeant(s string, names []string) string {
	n := nearest(s, names)
	limit := max(2, (len(s)-len("VASTFAKE_"))/3)
	if editDistance(s, n, limit) > limit {
		return ""
	}
	return n
}

// nearest returns the name in names closest to s by edit distance, the
// first of those equally close.
func nearest(s string, names []string) string {
	best, bestDist := "", -1
	for _, n := range names {
		if d := editDistance(s, n, bestDist); bestDist < 0 || d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, comparing
// bytes; once every cell of a row exceeds limit (when limit >= 0) it
// returns early with a distance above limit, so a long a costs little.
func editDistance(a, b string, limit int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if limit >= 0 && rowMin > limit {
			return rowMin
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
