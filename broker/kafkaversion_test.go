package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// TestParseKafkaVersion: the versions the broker follows, written as Kafka
// writes them, and an error naming them for anything else, quoting at most
// a short prefix of a long value.
func TestParseKafkaVersion(t *testing.T) {
	for in, want := range map[string]KafkaVersion{"4.0": Kafka4_0, "4.1": Kafka4_1, "4.2.0": Kafka4_2, "v4.3": Kafka4_3, " 4.3.1 ": Kafka4_3} {
		got, err := ParseKafkaVersion(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "4", "3.9", "4.4", "4.x", "4.3.x", "4.3.1.1", "-4.3", "999999.1", string(make([]byte, 100_000))} {
		_, err := ParseKafkaVersion(in)
		require.Error(t, err, "%.20q", in)
		assert.Contains(t, err.Error(), "want one of 4.0, 4.1, 4.2, 4.3")
		assert.Less(t, len(err.Error()), 400, "a long value is not echoed")
	}
	for _, v := range KafkaVersions() {
		got, err := ParseKafkaVersion(v.String())
		require.NoError(t, err)
		assert.Equal(t, v, got)
	}
}

// TestEveryKafkaVersionAdvertisesWhatItServes: under every Kafka version and
// profile, each API is advertised within the versions kmsg knows and the
// table serves, newer versions never advertise less than older ones, and
// each ceiling names a release the broker can follow.
func TestEveryKafkaVersionAdvertisesWhatItServes(t *testing.T) {
	for _, a := range apiTable {
		for _, c := range a.ceilings {
			assert.Contains(t, KafkaVersions(), c.before, "%s's ceiling", kmsg.NameForKey(a.key))
			assert.Less(t, c.max, a.max, "%s's ceiling lowers its max", kmsg.NameForKey(a.key))
		}
	}
	for _, r := range []rules.Rules{rules.Kafka(), rules.VAST()} {
		prev := map[int16]int16{}
		for _, v := range KafkaVersions() {
			apis, _, _ := buildAPIs(&r, v)
			now := map[int16]int16{}
			for _, a := range apis {
				req := kmsg.RequestForKey(a.key)
				require.NotNil(t, req)
				assert.LessOrEqual(t, a.advertised, req.MaxVersion(), "%s under %s", kmsg.NameForKey(a.key), v)
				assert.LessOrEqual(t, a.min, a.advertised)
				now[a.key] = a.advertised
			}
			for key, max := range prev {
				assert.GreaterOrEqual(t, now[key], max, "%s under %s advertises less than under an older version", kmsg.NameForKey(key), v)
			}
			prev = now
		}
	}
}
