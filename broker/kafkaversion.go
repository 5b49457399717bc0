package broker

// The Kafka version the broker follows (WithKafkaVersion, -kafka-version):
// which release's semantics the kafka and audit profiles copy where Kafka
// 4.x releases differ. One test can run under several versions; ApiVersions
// and its features follow the choice, derived from the API table
// (api.ceilings) and the predicates here, never from a second table.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// KafkaVersion is an Apache Kafka release, major and minor: 4.0 to 4.3.
type KafkaVersion struct{ major, minor uint8 }

// The Kafka versions the broker can follow.
var (
	Kafka4_0 = KafkaVersion{4, 0}
	Kafka4_1 = KafkaVersion{4, 1}
	Kafka4_2 = KafkaVersion{4, 2}
	Kafka4_3 = KafkaVersion{4, 3}
)

// DefaultKafkaVersion is the version the broker follows unless told
// otherwise: the newest.
var DefaultKafkaVersion = Kafka4_3

// KafkaVersions lists the versions the broker can follow, oldest first.
func KafkaVersions() []KafkaVersion { return []KafkaVersion{Kafka4_0, Kafka4_1, Kafka4_2, Kafka4_3} }

// ParseKafkaVersion reads a version as "4.3" (a patch, "4.3.1", is
// accepted and ignored: no patch release changes the protocol). It returns
// an error naming the versions it knows for any other.
func ParseKafkaVersion(s string) (KafkaVersion, error) {
	fields := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(fields) == 2 || len(fields) == 3 {
		major, err1 := strconv.ParseUint(fields[0], 10, 8)
		minor, err2 := strconv.ParseUint(fields[1], 10, 8)
		patchOK := true
		if len(fields) == 3 {
			_, err := strconv.ParseUint(fields[2], 10, 8)
			patchOK = err == nil
		}
		if err1 == nil && err2 == nil && patchOK {
			v := KafkaVersion{uint8(major), uint8(minor)}
			for _, known := range KafkaVersions() {
				if v == known {
					return v, nil
				}
			}
		}
	}
	return KafkaVersion{}, fmt.Errorf("unknown Kafka version %q (want one of %s)", clipValue(s), kafkaVersionNames())
}

// kafkaVersionNames lists KafkaVersions for an error: "4.0, 4.1, ...".
func kafkaVersionNames() string {
	names := make([]string, 0, 4)
	for _, v := range KafkaVersions() {
		names = append(names, v.String())
	}
	return strings.Join(names, ", ")
}

// clipValue quotes at most the first 64 bytes of a value in an error.
func clipValue(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// String returns the version as "4.3".
func (v KafkaVersion) String() string {
	return strconv.Itoa(int(v.major)) + "." + strconv.Itoa(int(v.minor))
}

// Before reports whether v is an older release than w.
func (v KafkaVersion) Before(w KafkaVersion) bool {
	return v.major < w.major || v.major == w.major && v.minor < w.minor
}

// TransactionsV2 reports whether v finalizes transaction.version 2
// (KIP-890's second part): clients then add partitions by producing (Produce
// v12+) and groups by committing (TxnOffsetCommit v5+), and every EndTxn
// (v5+) bumps the producer epoch. 4.0 here is a cluster that kept
// transaction.version 1, as one upgraded from 3.x does; what a request gets
// follows its own version on every Kafka version, as in Kafka.
func (v KafkaVersion) TransactionsV2() bool { return !v.Before(Kafka4_1) }

// ShareGroups reports whether v serves share groups (KIP-932), production
// from Kafka 4.2: the share-group APIs are advertised and share.version is
// finalized at 1.
func (v KafkaVersion) ShareGroups() bool { return !v.Before(Kafka4_2) }

// AssignmentEpochs reports whether v checks a KIP-848 member's commits by
// the epoch each partition was assigned at (KIP-1251, Kafka 4.3): a commit
// is refused only when its epoch is newer than the member's, or older than
// the partition's assignment epoch; before 4.3 the epoch must be the
// member's.
func (v KafkaVersion) AssignmentEpochs() bool { return !v.Before(Kafka4_3) }

// releaseVersions is franz-go's table of what release v supports (kversion),
// which holds the metadata.version levels of each release.
func (v KafkaVersion) releaseVersions() *kversion.Versions {
	switch v {
	case Kafka4_0:
		return kversion.V4_0_0()
	case Kafka4_1:
		return kversion.V4_1_0()
	case Kafka4_2:
		return kversion.V4_2_0()
	}
	return kversion.V4_3_0()
}

// feature is one KIP-584 feature ApiVersions v3+ lists: the levels the
// broker supports and the level the cluster finalized (0: listed as
// supported only, as Kafka lists a feature finalized at 0).
type feature struct {
	name          string
	min, max, lvl int16
}

// features returns what a broker following v lists in ApiVersions, given
// what it serves (served reports whether ApiVersions advertises an API key
// at a version): metadata.version as v formats a cluster; transaction.version
// when transactions are served, finalized at 2 only when v finalizes it and
// the table serves KIP-890's second part (Produce v12, TxnOffsetCommit v5,
// EndTxn v5), else 1; group.version 1 when KIP-848 groups are served;
// share.version (Kafka 4.1 and later) finalized at 1 when share groups are
// served. A feature governing APIs that are not served (the VAST profile's
// transactions and groups) is not listed, so no client takes it for a
// promise.
func (v KafkaVersion) features(served func(key, version int16) bool) []feature {
	var out []feature
	rel := v.releaseVersions()
	rel.EachSupportedFeature(func(name string, lo, hi int16) {
		if name != "metadata.version" {
			return
		}
		f := feature{name: name, min: lo, max: hi}
		rel.EachFinalizedFeature(func(n string, level int16) {
			if n == name {
				f.lvl = level
			}
		})
		out = append(out, f)
	})
	if served(int16(kmsg.EndTxn), 0) {
		f := feature{name: "transaction.version", min: 0, max: 2, lvl: 1}
		if v.TransactionsV2() && served(int16(kmsg.Produce), 12) && served(int16(kmsg.TxnOffsetCommit), 5) && served(int16(kmsg.EndTxn), 5) {
			f.lvl = 2
		}
		out = append(out, f)
	}
	if served(int16(kmsg.ConsumerGroupHeartbeat), 0) {
		out = append(out, feature{name: "group.version", min: 0, max: 1, lvl: 1})
	}
	if !v.Before(Kafka4_1) {
		f := feature{name: "share.version", min: 0, max: 1}
		if v.ShareGroups() && served(int16(kmsg.ShareGroupHeartbeat), 1) {
			f.lvl = 1
		}
		out = append(out, f)
	}
	return out
}

// KafkaVersion returns the Kafka version the broker follows
// (WithKafkaVersion).
func (b *Broker) KafkaVersion() KafkaVersion { return b.cfg.kafka }
