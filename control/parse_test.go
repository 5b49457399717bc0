package control

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFaultParametersStayInRange(t *testing.T) {
	t.Parallel()
	code, err := errCode("not_leader_for_partition")
	assert.NoError(t, err)
	assert.Equal(t, kerr.NotLeaderForPartition.Code, code)
	code, err = errCode("9999")
	assert.NoError(t, err, "a code Kafka has not named can still be injected")
	assert.Equal(t, int16(9999), code)
	_, err = errCode("70000")
	assert.Error(t, err, "not an int16: refused rather than wrapped")

	assert.Equal(t, "NOT_LEADER_FOR_PARTITION", errName(kerr.NotLeaderForPartition.Code))
	assert.Equal(t, "UNKNOWN_SERVER_ERROR", errName(-1))
	assert.Equal(t, "9999", errName(9999), "echoed as sent, not as UNKNOWN_SERVER_ERROR")
	assert.Equal(t, "", errName(0))

	key, err := apiKey("produce")
	assert.NoError(t, err)
	assert.Equal(t, kmsg.Produce, key)
	_, err = apiKey("65536")
	assert.Error(t, err, "not an int16: refused rather than read as Produce")
}
