package broker

// Names repeated in one request. Kafka answers a topic, partition, group,
// member or config resource named twice in one request once: it collects
// the request into a map (Produce, Fetch, DeleteRecords, OffsetCommit's
// log replay, which keeps the last copy), or refuses the repeats with
// INVALID_REQUEST (ListOffsets, CreateTopics, DeleteTopics, CreatePartitions,
// the config APIs). Where Kafka answers each copy again (DescribeGroups,
// OffsetFetch's groups, FindCoordinator's keys, LeaveGroup's members),
// vastfake answers once, so that an answer never grows with the copies a
// request repeats: a request of a few kilobytes naming one large group 2,000
// times would otherwise be answered with gigabytes. Every handler whose
// request holds a list of names passes it through one of these helpers; the
// test over the whole API table (TestRepeatedNamesAreAnsweredOnce) checks
// that none is left out.

import "slices"

// smallRepeats is the length up to which repeats are looked for without a
// map, so that the usual small requests do not allocate.
const smallRepeats = 64

// hasRepeats reports whether two items of items have the same key.
func hasRepeats[T any, K comparable](items []T, key func(*T) K) bool {
	if len(items) < 2 {
		return false
	}
	if len(items) <= smallRepeats {
		for i := range items {
			ki := key(&items[i])
			for j := range i {
				if key(&items[j]) == ki {
					return true
				}
			}
		}
		return false
	}
	// Not sized by len(items) up front: a request of a million copies of a
	// few names finds a repeat early, in a small map.
	seen := make(map[K]struct{}, min(len(items), 4096))
	for i := range items {
		k := key(&items[i])
		if _, ok := seen[k]; ok {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}

// firstOfEach returns items with each key once, in the place and with the
// value of its first copy. It returns items itself when no key repeats.
func firstOfEach[T any, K comparable](items []T, key func(*T) K) []T {
	if !hasRepeats(items, key) {
		return items
	}
	// Neither the map nor out is sized by len(items): their memory follows
	// the distinct keys, not the copies a request repeats.
	seen := make(map[K]struct{})
	var out []T
	for i := range items {
		k := key(&items[i])
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, items[i])
	}
	return out
}

// lastOfEach returns items with each key once, in the place of its first
// copy and with the value of its last, as Kafka's handlers keep the last
// copy when they collect a request into a map. It returns items itself when
// no key repeats.
func lastOfEach[T any, K comparable](items []T, key func(*T) K) []T {
	if !hasRepeats(items, key) {
		return items
	}
	at := make(map[K]int) // sized by the distinct keys, as in firstOfEach
	var out []T
	for i := range items {
		k := key(&items[i])
		if j, ok := at[k]; ok {
			out[j] = items[i]
			continue
		}
		at[k] = len(out)
		out = append(out, items[i])
	}
	return out
}

// mergeTopics returns topics with each topic once, in the place of its
// first copy, holding the partitions of every copy; parts passes its
// partitions through pick (firstOfEach or lastOfEach). A topic's other
// fields are its first copy's. It returns topics itself when nothing
// repeats, and never changes topics or the partitions they hold.
func mergeTopics[T, P any, K comparable](topics []T, key func(*T) K, parts func(*T) *[]P, partKey func(*P) int32,
	pick func([]P, func(*P) int32) []P) []T {
	repeats := hasRepeats(topics, key)
	if !repeats {
		for i := range topics {
			if hasRepeats(*parts(&topics[i]), partKey) {
				repeats = true
				break
			}
		}
	}
	if !repeats {
		return topics
	}
	if !hasRepeats(topics, key) {
		// Only partitions repeat: pick within each topic, without first
		// copying every partition of the request.
		out := slices.Clone(topics)
		for i := range out {
			*parts(&out[i]) = pick(*parts(&topics[i]), partKey)
		}
		return out
	}
	at := make(map[K]int, len(topics))
	out := make([]T, 0, len(topics))
	for i := range topics {
		k := key(&topics[i])
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, topics[i])
			*parts(&out[j]) = nil
		}
		*parts(&out[j]) = append(*parts(&out[j]), *parts(&topics[i])...)
	}
	for j := range out {
		*parts(&out[j]) = pick(*parts(&out[j]), partKey)
	}
	return out
}

// repeatedKeys returns the keys that appear more than once in items, or nil
// when none does.
func repeatedKeys[T any, K comparable](items []T, key func(*T) K) map[K]bool {
	if !hasRepeats(items, key) {
		return nil
	}
	seen := make(map[K]bool, len(items))
	dups := make(map[K]bool)
	for i := range items {
		k := key(&items[i])
		if seen[k] {
			dups[k] = true
		}
		seen[k] = true
	}
	return dups
}

func self[T any](v *T) T { return *v }

// sameSlice reports whether a and b are the same slice, as the helpers above
// return their argument when nothing repeats.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// derefString returns *s, or "" for nil.
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
