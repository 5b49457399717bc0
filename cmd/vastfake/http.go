package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/control"
)

// serveControl serves b's HTTP control plane and live page (package
// control) on addr, requiring token when it is not empty and answering the
// Host names in allowHosts besides localhost and IP addresses (the host of
// addr is always allowed). It holds at most control.MaxConns connections
// open at once, with control.NewServer's timeouts. It returns the bound
// address (the host of addr and the port it got) and a stop
// function that shuts the server down, waiting up to five seconds for
// requests in flight, and returns once the serving goroutine has exited;
// stop is safe to call more than once.
func serveControl(b *broker.Broker, addr, token string, allowHosts []string, logger *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	if host != "" {
		allowHosts = append(allowHosts, host)
	}
	ln = control.LimitListener(ln, control.MaxConns)
	srv := control.NewServer(control.New(b, control.WithToken(token), control.WithAllowedHosts(allowHosts...)), logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("control plane stopped", "err", err)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
			<-done
		})
	}
	// Named as the Kafka listeners are: the host asked for, the port got.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return net.JoinHostPort(host, port), stop, nil
}

// checkHealth is -healthcheck: GET /healthz on the control plane at addr
// (-http; an unspecified host, 0.0.0.0 or ::, is dialled on loopback),
// with a two-second timeout. It returns nil on 200 and an error saying
// why otherwise: the control plane's own error for a refusal (a 403 names
// the Host header it does not allow, and how to allow it).
func checkHealth(addr string) error {
	if addr == "" {
		return errors.New("-healthcheck: no control plane to ask: set -http (VASTFAKE_HTTP) as for the broker it checks")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-healthcheck: -http (VASTFAKE_HTTP) %q: want host:port", addr)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("-healthcheck: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var body struct{ Error string }
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	why := ""
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		why = ": " + clipError(errors.New(body.Error))
	}
	return fmt.Errorf("-healthcheck: GET %s: %s%s", url, resp.Status, why)
}
