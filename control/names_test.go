package control_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/control"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
)

// storedName is an endpoint that keeps a name its client chose: how to
// call it with a name, and the longest name it keeps.
type storedName struct {
	bound int
	call  func(url, name string) (method, path string, body any)
}

// namedRoutes lists every endpoint that keeps a client-named string.
var namedRoutes = map[string]storedName{
	"POST /groups/{name}/coordinator": {coordinator.MaxGroupIDBytes, func(url, name string) (string, string, any) {
		return "POST", url + "/groups/" + name + "/coordinator?broker=1", nil
	}},
	"PUT /advertise": {broker.MaxAdvertisedHost, func(url, name string) (string, string, any) {
		return "PUT", url + "/advertise", map[string]any{"addresses": []string{name + ":9092", name + ":9093"}}
	}},
	"POST /faults": {coordinator.MaxGroupIDBytes, func(url, name string) (string, string, any) {
		return "POST", url + "/faults", map[string]any{"api": "OffsetCommit", "err": "NOT_COORDINATOR", "group": name}
	}},
}

// namelessRoutes lists every other endpoint that changes the broker, with
// why it keeps no name of its client's.
var namelessRoutes = map[string]string{
	"DELETE /audit":                             "forgets",
	"DELETE /requests":                          "forgets",
	"DELETE /faults":                            "forgets",
	"POST /latency":                             "an API key and a duration",
	"POST /drop-connections":                    "a broker id",
	"POST /failover":                            "no argument",
	"POST /reset":                               "no argument",
	"POST /restart":                             "no argument",
	"POST /brokers/{id}/down":                   "a broker id",
	"POST /brokers/{id}/up":                     "a broker id",
	"POST /brokers/{id}/failover":               "a broker id and a duration",
	"POST /topics/{name}/partitions/{p}/leader": "an existing partition (404 for others) and a broker id",
	"POST /stale-end-offset":                    "a duration",
	"POST /topics/{name}/compact":               "an existing topic (404 for others)",
	"POST /topics/{name}/partitions/{p}/skip":   "an existing partition (404 for others) and a count",
	"POST /clock/advance":                       "a duration",
}

// TestEveryRouteBoundsTheNamesItStores walks the route table: every
// endpoint that changes the broker either keeps no client-named string
// (namelessRoutes says why) or bounds it (namedRoutes): a name at the bound
// is kept, one byte more is refused with 400 and a JSON error naming the
// bound, never 404 or success, and quoting at most a short prefix of the
// name. The topic of a fault is bounded as topics
// are (249 bytes).
func TestEveryRouteBoundsTheNamesItStores(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Brokers(2), fixtures.Topic("orders", 1))
	url := serve(t, k)
	for _, pattern := range control.Routes() {
		method, _, _ := strings.Cut(pattern, " ")
		if method == "GET" {
			continue
		}
		_, named := namedRoutes[pattern]
		_, nameless := namelessRoutes[pattern]
		require.True(t, named != nameless, "%s: list it in namedRoutes with its bound, or in namelessRoutes with why it keeps no name", pattern)
	}
	for pattern, r := range namedRoutes {
		t.Run(pattern, func(t *testing.T) {
			method, path, body := r.call(url, strings.Repeat("n", r.bound))
			status := call(t, method, path, body, nil)
			assert.Less(t, status, 300, "a name at the bound is kept")
			var e struct{ Error string }
			method, path, body = r.call(url, strings.Repeat("n", r.bound+1))
			assert.Equal(t, http.StatusBadRequest, call(t, method, path, body, &e))
			assert.Contains(t, e.Error, fmt.Sprint(r.bound), "the refusal names the bound")
			assert.Less(t, len(e.Error), 1024, "the refusal quotes at most a short prefix of the name: an answer is bounded like its request")
		})
	}
	var e struct{ Error string }
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", url+"/faults",
		map[string]any{"api": "Produce", "err": 6, "topic": strings.Repeat("t", 250)}, &e))
	assert.Contains(t, e.Error, "249")
}

// TestCoordinatorMoveBoundIsAConflict: past broker.MaxCoordinatorMoves
// groups POST /groups/{name}/coordinator answers 409 naming the bound, not
// 404; a group moved already moves again.
func TestCoordinatorMoveBoundIsAConflict(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Brokers(2))
	url := serve(t, k)
	for i := range broker.MaxCoordinatorMoves {
		require.NoError(t, k.Broker().MoveCoordinator(fmt.Sprint("g", i), 1))
	}
	var e struct{ Error string }
	assert.Equal(t, http.StatusConflict, call(t, "POST", url+"/groups/one-more/coordinator?broker=1", nil, &e))
	assert.Contains(t, e.Error, fmt.Sprint(broker.MaxCoordinatorMoves))
	assert.Equal(t, http.StatusOK, call(t, "POST", url+"/groups/g0/coordinator?broker=0", nil, nil))
}
