package containers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
)

// Control is a client of vastfake's HTTP control plane, for a broker in
// another process or a container: its methods are the *broker.Broker calls
// a test makes in process, each one request (the control plane's routes,
// listed on vastfake's Containers page), with a context. Do reaches every
// other route.
type Control struct {
	base  string
	token string
	http  *http.Client
}

// NewControl returns a client of the control plane at base
// ("http://host:port"), sending token as a bearer token when it is not
// empty (-http-token).
func NewControl(base, token string) *Control {
	return &Control{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

// URL returns the control plane's base URL, where a browser shows the live
// page.
func (c *Control) URL() string { return c.base }

// Error is a control plane answer with a status of 400 or more.
type Error struct {
	Method, Path string
	Status       int
	// Message is the answer's "error".
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("vastfake control plane: %s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// Is makes errors.Is(err, broker.ErrUnknownBroker) true for a 404 of a
// broker id the broker does not have, as the in-process call returns.
func (e *Error) Is(target error) bool {
	return target == broker.ErrUnknownBroker && e.Status == http.StatusNotFound &&
		bytes.Contains([]byte(e.Message), []byte(broker.ErrUnknownBroker.Error()))
}

// Do sends method path (with its query, "/topics?x=y") with body as JSON
// when it is not nil, and decodes the JSON answer into out when it is not
// nil. A status of 400 or more is an *Error.
func (c *Control) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(data)
		}
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("vastfake control plane: %s %s: %w", method, path, err)
	}
	return nil
}

// Healthz returns nil once the broker answers GET /healthz.
func (c *Control) Healthz(ctx context.Context) error { return c.Do(ctx, "GET", "/healthz", nil, nil) }

// SetAdvertised is Broker.SetAdvertised: PUT /advertise, one host:port per
// broker id, in order.
func (c *Control) SetAdvertised(ctx context.Context, addrs ...string) error {
	return c.Do(ctx, "PUT", "/advertise", map[string][]string{"addresses": addrs}, nil)
}

// Advertised is Broker.Advertised: GET /advertise.
func (c *Control) Advertised(ctx context.Context) ([]string, error) {
	var out struct {
		Addresses []string `json:"addresses"`
	}
	err := c.Do(ctx, "GET", "/advertise", nil, &out)
	return out.Addresses, err
}

// InjectFault is Broker.InjectFault: POST /faults.
func (c *Control) InjectFault(ctx context.Context, f broker.Fault) error {
	body := map[string]any{"api": int16(f.API), "count": f.Count, "topic": f.Topic, "group": f.Group}
	if f.DropAnswer {
		body["dropAnswer"] = true
	} else {
		body["err"] = f.Err
	}
	if f.Partitions != nil {
		body["partitions"] = f.Partitions
	}
	if f.Broker != nil {
		body["broker"] = *f.Broker
	}
	return c.Do(ctx, "POST", "/faults", body, nil)
}

// ClearFaults is Broker.ClearFaults: DELETE /faults (faults and latency).
func (c *Control) ClearFaults(ctx context.Context) error {
	return c.Do(ctx, "DELETE", "/faults", nil, nil)
}

// SetLatency is Broker.SetLatency: POST /latency; 0 removes it.
func (c *Control) SetLatency(ctx context.Context, api kmsg.Key, d time.Duration) error {
	return c.Do(ctx, "POST", "/latency?"+url.Values{"api": {strconv.Itoa(int(api))}, "d": {d.String()}}.Encode(), nil, nil)
}

// SetBrokerLatency is Broker.SetBrokerLatency: POST /latency?broker=id.
func (c *Control) SetBrokerLatency(ctx context.Context, id int32, api kmsg.Key, d time.Duration) error {
	q := url.Values{"api": {strconv.Itoa(int(api))}, "d": {d.String()}, "broker": {strconv.Itoa(int(id))}}
	return c.Do(ctx, "POST", "/latency?"+q.Encode(), nil, nil)
}

// DropConnections is Broker.DropConnections: POST /drop-connections.
func (c *Control) DropConnections(ctx context.Context) error {
	return c.Do(ctx, "POST", "/drop-connections", nil, nil)
}

// DropBrokerConnections is Broker.DropBrokerConnections.
func (c *Control) DropBrokerConnections(ctx context.Context, id int32) error {
	return c.Do(ctx, "POST", "/drop-connections?broker="+strconv.Itoa(int(id)), nil, nil)
}

// Failover is Broker.Failover: POST /failover.
func (c *Control) Failover(ctx context.Context) error {
	return c.Do(ctx, "POST", "/failover", nil, nil)
}

// Reset is Broker.Reset: POST /reset.
func (c *Control) Reset(ctx context.Context) error { return c.Do(ctx, "POST", "/reset", nil, nil) }

// Restart is Broker.Restart: POST /restart.
func (c *Control) Restart(ctx context.Context) error { return c.Do(ctx, "POST", "/restart", nil, nil) }

// BrokerDown is Broker.BrokerDown: POST /brokers/{id}/down.
func (c *Control) BrokerDown(ctx context.Context, id int32) error {
	return c.Do(ctx, "POST", "/brokers/"+strconv.Itoa(int(id))+"/down", nil, nil)
}

// BrokerUp is Broker.BrokerUp: POST /brokers/{id}/up.
func (c *Control) BrokerUp(ctx context.Context, id int32) error {
	return c.Do(ctx, "POST", "/brokers/"+strconv.Itoa(int(id))+"/up", nil, nil)
}

// FailOverAddress is Broker.FailOverAddress: POST
// /brokers/{id}/failover?blackout=.
func (c *Control) FailOverAddress(ctx context.Context, id int32, blackout time.Duration) error {
	return c.Do(ctx, "POST", "/brokers/"+strconv.Itoa(int(id))+"/failover?blackout="+blackout.String(), nil, nil)
}

// BrokerView is one broker id in GET /brokers.
type BrokerView struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"` // where it listens, in the container
	Down bool   `json:"down"`
}

// Brokers is GET /brokers: the broker ids, where each listens and which are
// down.
func (c *Control) Brokers(ctx context.Context) ([]BrokerView, error) {
	var out struct {
		Brokers []BrokerView `json:"brokers"`
	}
	err := c.Do(ctx, "GET", "/brokers", nil, &out)
	return out.Brokers, err
}

// MoveLeader is Broker.MoveLeader: POST
// /topics/{name}/partitions/{p}/leader?broker=id.
func (c *Control) MoveLeader(ctx context.Context, topic string, p, id int32) error {
	return c.Do(ctx, "POST", "/topics/"+url.PathEscape(topic)+"/partitions/"+strconv.Itoa(int(p))+"/leader?broker="+strconv.Itoa(int(id)), nil, nil)
}

// MoveCoordinator is Broker.MoveCoordinator: POST
// /groups/{name}/coordinator?broker=id.
func (c *Control) MoveCoordinator(ctx context.Context, group string, id int32) error {
	return c.Do(ctx, "POST", "/groups/"+url.PathEscape(group)+"/coordinator?broker="+strconv.Itoa(int(id)), nil, nil)
}

// SetStaleEndOffset is Broker.SetStaleEndOffset: POST /stale-end-offset.
func (c *Control) SetStaleEndOffset(ctx context.Context, d time.Duration) error {
	return c.Do(ctx, "POST", "/stale-end-offset?d="+d.String(), nil, nil)
}

// Advance moves the broker's manual clock (-manual-clock) forward by d:
// POST /clock/advance. Without a manual clock it is an *Error with status
// 409.
func (c *Control) Advance(ctx context.Context, d time.Duration) error {
	return c.Do(ctx, "POST", "/clock/advance?d="+d.String(), nil, nil)
}

// Findings is GET /audit: what audited rules found, as JSON objects
// (broker.Finding's fields).
func (c *Control) Findings(ctx context.Context) ([]map[string]any, error) {
	var out struct {
		Findings []map[string]any `json:"findings"`
	}
	err := c.Do(ctx, "GET", "/audit", nil, &out)
	return out.Findings, err
}

// Group is GET /groups/{name}: the group's state, generation, members with
// their assignments, and committed offsets with lag, as JSON. A group the
// broker does not know is an *Error with status 404.
func (c *Control) Group(ctx context.Context, name string) (map[string]any, error) {
	var out map[string]any
	err := c.Do(ctx, "GET", "/groups/"+url.PathEscape(name), nil, &out)
	return out, err
}

// IsNotFound reports whether err is a control plane 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}
