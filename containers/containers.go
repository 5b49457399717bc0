// Package containers runs vastfake's container image for a test, with
// Testcontainers, for code that talks to Kafka from outside the test's
// process (another language's client in a container, a service under
// test, a Compose stack), or for a test that wants the broker in its own
// process and memory:
//
//	c, err := containers.Run(ctx, containers.Topic("orders", 3))
//	if err != nil { ... }
//	defer c.Terminate(ctx)
//	cl, err := kgo.NewClient(append(c.ClientOpts(), kgo.ConsumeTopics("orders"))...)
//	err = c.Control().InjectFault(ctx, broker.Fault{API: kmsg.Produce, Err: kerr.NotLeaderForPartition.Code, Count: 1})
//
// Run starts the image (vastfake:latest unless Image says otherwise: build
// it with go run ./cmd/vastimage -o vastfake.tar and load it with docker
// load or podman load) with every broker's Kafka port and the control
// plane's port mapped to random host ports, tells the broker those mapped
// addresses with PUT /advertise, so that Metadata sends clients to the host
// ports, and waits for GET /healthz. The control plane client (Control)
// offers the calls a test has in process on *broker.Broker, over HTTP.
//
// This is a module of its own so that vastfake's root module never depends
// on Docker libraries. Any testcontainers.ContainerCustomizer can be passed
// to Run besides this package's options (a network, a log consumer, ...).
package containers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// DefaultImage is the image Run starts unless Image names another: the
// tag go run ./cmd/vastimage writes.
const DefaultImage = "vastfake:latest"

// The image's ports: broker i listens on KafkaPort+i, the control plane on
// HTTPPort.
const (
	KafkaPort = 9092
	HTTPPort  = 8080
)

// settings are what this package's options set.
type settings struct {
	image   string
	brokers int
	args    []string
	token   string
	timeout time.Duration
	// certPEM and keyPEM are TLS's.
	certPEM, keyPEM []byte
}

// Option configures Run. It is a testcontainers.ContainerCustomizer, so
// that Run takes these and Testcontainers' own options in one list.
type Option func(*settings)

// Customize does nothing: Run reads an Option before it builds the
// container request.
func (Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

// Image starts ref instead of DefaultImage.
func Image(ref string) Option { return func(s *settings) { s.image = ref } }

// Profile sets the rules the broker applies: vast (the default), kafka or
// audit (-profile).
func Profile(name string) Option { return Args("-profile", name) }

// Brokers makes the broker n broker ids (-brokers), each on its own port
// in the container (9092, 9093, ...) mapped to its own host port.
func Brokers(n int) Option {
	return func(s *settings) {
		s.brokers = n
		s.args = append(s.args, "-brokers", strconv.Itoa(n))
	}
}

// Topic creates a topic at start (-topic), with optional configs as key,
// value pairs, as fixtures.Topic does in process.
func Topic(name string, partitions int32, configs ...string) Option {
	spec := name + ":" + strconv.Itoa(int(partitions))
	var kvs []string
	for i := 0; i+1 < len(configs); i += 2 {
		kvs = append(kvs, configs[i]+"="+configs[i+1])
	}
	if len(kvs) > 0 {
		spec += ":" + strings.Join(kvs, ",")
	}
	return Args("-topic", spec)
}

// Args passes flags of the vastfake binary (vastfake -h lists them), for
// example Args("-rule", "MaxGroups=10", "-manual-clock"). Environment
// variables (VASTFAKE_*) set the same through testcontainers.WithEnv.
func Args(args ...string) Option {
	return func(s *settings) { s.args = append(s.args, args...) }
}

// Token makes the control plane require token (-http-token); Control
// sends it.
func Token(token string) Option {
	return func(s *settings) {
		s.token = token
		s.args = append(s.args, "-http-token", token)
	}
}

// TLS makes the Kafka listeners speak TLS only (-tls-cert, -tls-key) with
// the PEM certificate and key given, copied into the container; ClientOpts
// then trusts that certificate. A client verifies the certificate against
// the host it dials, which is the advertised host: the container's Host,
// that is localhost, or the bridge's gateway when the tests run in a
// container themselves (TESTCONTAINERS_HOST_OVERRIDE sets it). So the
// certificate must name that host: fixtures.SelfSignedCert(host,
// "localhost", "127.0.0.1") makes one, with host from the Docker
// provider's DaemonHost. The control plane stays plain HTTP.
func TLS(certPEM, keyPEM []byte) Option {
	return func(s *settings) {
		s.certPEM, s.keyPEM = certPEM, keyPEM
		s.args = append(s.args, "-tls-cert", tlsDir+"/cert.pem", "-tls-key", tlsDir+"/key.pem")
	}
}

// tlsDir is where TLS puts the certificate and key in the container.
const tlsDir = "/tmp/tls"

// StartupTimeout bounds how long Run waits for the broker to answer
// GET /healthz; 60s by default.
func StartupTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// Container is a running vastfake container.
type Container struct {
	*testcontainers.DockerContainer
	addrs   []string
	control *Control
	tls     *tls.Config // the clients' TLS config, nil without TLS
}

// Run starts the image and returns once the broker answers GET /healthz
// with its advertised addresses set to the mapped host ports. On an error
// after the container was created it returns the container too (its logs
// say why, and the error quotes their end), so that the caller can
// Terminate it: testcontainers.CleanupContainer(t, c) does that either way.
// A broker that exits at start (a bad flag or VASTFAKE_* variable) fails
// Run at once with its message.
func Run(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	s := settings{image: DefaultImage, brokers: 1, timeout: 60 * time.Second}
	var customizers []testcontainers.ContainerCustomizer
	for _, o := range opts {
		if opt, ok := o.(Option); ok {
			opt(&s)
			continue
		}
		customizers = append(customizers, o)
	}
	ports := []string{strconv.Itoa(HTTPPort) + "/tcp"}
	for i := range max(s.brokers, 1) {
		ports = append(ports, strconv.Itoa(KafkaPort+i)+"/tcp")
	}
	all := []testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts(ports...),
		testcontainers.WithCmdArgs(s.args...),
		testcontainers.WithWaitStrategy(healthy{timeout: s.timeout, token: s.token}),
	}
	if s.certPEM != nil {
		// The broker runs as user 65532; the key is readable by it alone
		// in a container no one else can enter.
		all = append(all, testcontainers.WithFiles(
			testcontainers.ContainerFile{Reader: bytes.NewReader(s.certPEM), ContainerFilePath: tlsDir + "/cert.pem", FileMode: 0o644},
			testcontainers.ContainerFile{Reader: bytes.NewReader(s.keyPEM), ContainerFilePath: tlsDir + "/key.pem", FileMode: 0o644},
		))
	}
	all = append(all, customizers...)
	ctr, err := testcontainers.Run(ctx, s.image, all...)
	var c *Container
	if ctr != nil {
		c = &Container{DockerContainer: ctr}
	}
	if err != nil {
		return c, fmt.Errorf("vastfake container %s: %w", s.image, err)
	}
	if s.certPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(s.certPEM) {
			return c, errors.New("vastfake container: TLS: no certificate in certPEM")
		}
		c.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		return c, err
	}
	for i := range max(s.brokers, 1) {
		p, err := ctr.MappedPort(ctx, strconv.Itoa(KafkaPort+i)+"/tcp")
		if err != nil {
			return c, err
		}
		c.addrs = append(c.addrs, net.JoinHostPort(host, p.Port()))
	}
	hp, err := ctr.MappedPort(ctx, strconv.Itoa(HTTPPort)+"/tcp")
	if err != nil {
		return c, err
	}
	c.control = NewControl("http://"+net.JoinHostPort(host, hp.Port()), s.token)
	if err := c.control.SetAdvertised(ctx, c.addrs...); err != nil {
		return c, fmt.Errorf("vastfake container: advertise the mapped ports: %w", err)
	}
	return c, nil
}

// Bootstrap returns the bootstrap address clients connect to: the first
// broker's mapped host port.
func (c *Container) Bootstrap() string { return c.addrs[0] }

// BrokerAddrs returns every broker id's mapped host address, in id order:
// what Metadata hands to clients.
func (c *Container) BrokerAddrs() []string { return append([]string(nil), c.addrs...) }

// Control returns the client of the container's control plane.
func (c *Container) Control() *Control { return c.control }

// ClientOpts returns franz-go options for this broker that work against
// VAST Event Broker, as fixtures.ClientOpts does in process, and with TLS
// a dialer that trusts the container's certificate.
func (c *Container) ClientOpts() []kgo.Opt {
	opts := fixtures.ClientOpts(c.Bootstrap())
	if c.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(c.tls.Clone()))
	}
	return opts
}

// healthy waits until the control plane answers GET /healthz, and fails
// at once, quoting the end of the container's logs, when the container
// stops running first.
type healthy struct {
	timeout time.Duration
	token   string
}

// WaitUntilReady polls the container's state and GET /healthz on the
// mapped control plane port every 50ms until it answers 200, the container
// exits, or the timeout passes.
func (h healthy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		state, err := target.State(ctx)
		if err != nil {
			return err
		}
		if !state.Running {
			return fmt.Errorf("vastfake exited with code %d before it was ready: %s", state.ExitCode, logTail(ctx, target))
		}
		if last = h.ping(ctx, client, target); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vastfake was not ready in %v: %v; logs: %s", h.timeout, last, logTail(context.Background(), target))
		case <-tick.C:
		}
	}
}

// ping sends one GET /healthz.
func (h healthy) ping(ctx context.Context, client *http.Client, target wait.StrategyTarget) error {
	host, err := target.Host(ctx)
	if err != nil {
		return err
	}
	p, err := target.MappedPort(ctx, strconv.Itoa(HTTPPort)+"/tcp")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, p.Port())+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}

// logTail returns the container's logs, cut to their first 512 bytes and
// their last 1.5 KiB when longer: the binary prints why it stopped on the
// last line, or for a bad flag on the first, before the usage.
func logTail(ctx context.Context, target wait.StrategyTarget) string {
	rc, err := target.Logs(ctx)
	if err != nil {
		return "(no logs: " + err.Error() + ")"
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil && !errors.Is(err, io.EOF) && len(data) == 0 {
		return "(no logs: " + err.Error() + ")"
	}
	if len(data) > 2048 {
		data = append(append(data[:512:512], "\n...\n"...), data[len(data)-1536:]...)
	}
	return strings.TrimSpace(string(data))
}
