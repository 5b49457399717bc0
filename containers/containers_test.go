package containers_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mobyclient "github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/containers"
	"github.com/vastfake/vastfake/fixtures"
)

// deadline bounds every wait; it never decides behaviour.
const deadline = 60 * time.Second

// runLabel marks every container these tests start with this run's id
// (VASTFAKE_TEST_RUN, or one made up), so that TestMain, and the script
// that runs them (test.sh) after a killed run, can remove any left behind.
var runLabel = map[string]string{"vastfake.test-run": os.Getenv("VASTFAKE_TEST_RUN")}

// testImage is the image the tests start: this checkout's, built and
// loaded by TestMain under a tag of this run's own, so that runs side by
// side (and vastfake:latest) do not get in each other's way.
var testImage string

// noEngine says why there is no container engine to test with; the tests
// that need one then skip, or fail when CI is set.
var noEngine error

// TestMain builds the image with cmd/vastimage and loads it into the
// container engine DOCKER_HOST names (Docker, or podman system service),
// through the engine's API as docker load does; the tests then start it,
// and it is removed at the end. Without an engine only the tests that need
// none run, unless CI is set.
func TestMain(m *testing.M) {
	if runLabel["vastfake.test-run"] == "" {
		runLabel["vastfake.test-run"] = fmt.Sprintf("go-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	testImage = "vastfake:" + runLabel["vastfake.test-run"]
	if code, err := loadImage(); err != nil {
		if os.Getenv("CI") != "" || code != 0 {
			fmt.Fprintln(os.Stderr, "container tests:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping the container tests:", err)
		noEngine = err
		os.Exit(m.Run())
	}
	code := m.Run()
	if err := removeLeftovers(); err != nil {
		fmt.Fprintln(os.Stderr, "container tests:", err)
		code = 1
	}
	os.Exit(code)
}

// needEngine skips t without a container engine.
func needEngine(t *testing.T) {
	t.Helper()
	if noEngine != nil {
		t.Skip(noEngine)
	}
}

// removeLeftovers removes every container of this run that is still
// there, and the run's image: each test removes its own containers, so one
// left here means a test lost track of it, which fails the run after the
// removal.
func removeLeftovers() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	label := "vastfake.test-run=" + runLabel["vastfake.test-run"]
	list, err := cli.ContainerList(ctx, mobyclient.ContainerListOptions{All: true, Filters: mobyclient.Filters{}.Add("label", label)})
	if err != nil {
		return err
	}
	var left []string
	for _, c := range list.Items {
		left = append(left, c.ID[:12])
		if _, err := cli.ContainerRemove(ctx, c.ID, mobyclient.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			return err
		}
	}
	if _, err := cli.ImageRemove(ctx, testImage, mobyclient.ImageRemoveOptions{}); err != nil {
		return fmt.Errorf("remove the image %s: %w", testImage, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("removed %d containers the tests left behind: %s", len(left), strings.Join(left, " "))
	}
	return nil
}

// loadImage builds and loads the image; code 0 with an error means there
// is no container engine to test with, 1 that building or loading failed.
func loadImage() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, fmt.Errorf("no container engine: %w", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, mobyclient.PingOptions{}); err != nil {
		return 0, fmt.Errorf("no container engine at DOCKER_HOST=%q: %w", os.Getenv("DOCKER_HOST"), err)
	}
	dir, err := os.MkdirTemp("", "vastfake-image")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	tarball := filepath.Join(dir, "vastfake.tar")
	build := exec.CommandContext(ctx, "go", "run", "./cmd/vastimage", "-o", tarball,
		"-version", strings.TrimPrefix(testImage, "vastfake:"), "-latest=false")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 1, fmt.Errorf("go run ./cmd/vastimage: %w", err)
	}
	f, err := os.Open(tarball)
	if err != nil {
		return 1, err
	}
	defer f.Close()
	res, err := cli.ImageLoad(ctx, f)
	if err != nil {
		return 1, fmt.Errorf("load the image: %w", err)
	}
	defer res.Close()
	if _, err := io.Copy(io.Discard, res); err != nil {
		return 1, fmt.Errorf("load the image: %w", err)
	}
	return 0, nil
}

// start runs the image for t and removes the container when t ends, pass
// or fail.
func start(t *testing.T, opts ...testcontainers.ContainerCustomizer) *containers.Container {
	t.Helper()
	c, err := run(t, opts...)
	require.NoError(t, err)
	return c
}

// run is start that returns Run's error.
func run(t *testing.T, opts ...testcontainers.ContainerCustomizer) (*containers.Container, error) {
	t.Helper()
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	opts = append([]testcontainers.ContainerCustomizer{containers.Image(testImage)}, opts...)
	c, err := containers.Run(ctx, append(opts, testcontainers.WithLabels(runLabel))...)
	if c != nil {
		testcontainers.CleanupContainer(t, c.DockerContainer)
	}
	return c, err
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// client returns a kgo client of c with ClientOpts and opts, closed when
// t ends.
func client(t *testing.T, c *containers.Container, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(c.ClientOpts(), opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestProduceConsumeAsGroup: a producer and a consumer group through the
// mapped port; Metadata sends the clients to the mapped host port, and the
// group's commits are stored.
func TestProduceConsumeAsGroup(t *testing.T) {
	t.Parallel()
	c := start(t, containers.Topic("orders", 3))
	ctx := ctx(t)

	adm := kadm.NewClient(client(t, c))
	md, err := adm.BrokerMetadata(ctx)
	require.NoError(t, err)
	require.Len(t, md.Brokers, 1)
	assert.Equal(t, c.Bootstrap(), net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))),
		"Metadata names the mapped host port")

	prod := client(t, c, kgo.DefaultProduceTopic("orders"))
	for i := range 30 {
		require.NoError(t, prod.ProduceSync(ctx, kgo.KeyStringRecord(strconv.Itoa(i), "order "+strconv.Itoa(i))).FirstErr())
	}

	cons := client(t, c, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 30 {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of 30", len(seen))
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	require.NoError(t, cons.CommitUncommittedOffsets(ctx))

	offsets, err := adm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	var committed int64
	offsets.Each(func(o kadm.OffsetResponse) { committed += o.At })
	assert.Equal(t, int64(30), committed, "the group committed every record")
	g, err := c.Control().Group(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, "Stable", g["state"])
}

// TestFaultThroughControlPlane: a fault injected over the control plane
// fails the next produce with its error, and the one after succeeds;
// GET /advertise answers the mapped addresses Run set; flags and VASTFAKE_*
// variables both reach the binary.
func TestFaultThroughControlPlane(t *testing.T) {
	t.Parallel()
	c := start(t, containers.Topic("orders", 1), containers.Profile("kafka"),
		testcontainers.WithEnv(map[string]string{"VASTFAKE_TOPICS": "from-env:2"}))
	ctx := ctx(t)
	addrs, err := c.Control().Advertised(ctx)
	require.NoError(t, err)
	assert.Equal(t, c.BrokerAddrs(), addrs)
	topics, err := kadm.NewClient(client(t, c)).ListTopics(ctx)
	require.NoError(t, err)
	assert.Len(t, topics["from-env"].Partitions, 2, "a VASTFAKE_* variable sets its flag in the container")

	prod := client(t, c, kgo.DefaultProduceTopic("orders"))
	require.NoError(t, prod.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr())
	require.NoError(t, c.Control().InjectFault(ctx, broker.Fault{API: kmsg.Produce, Err: kerr.TopicAuthorizationFailed.Code, Count: 1}))
	err = prod.ProduceSync(ctx, kgo.StringRecord("refused")).FirstErr()
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.NoError(t, prod.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(), "the fault was for one request")

	assert.True(t, containers.IsNotFound(c.Control().BrokerDown(ctx, 7)))
	assert.ErrorIs(t, c.Control().BrokerDown(ctx, 7), broker.ErrUnknownBroker)
}

// TestThreeBrokersOneDown: three broker ids, each on its own mapped port;
// with broker 1 down the partitions that brokers 0 and 2 lead take
// records, and once it is up again so does its own.
func TestThreeBrokersOneDown(t *testing.T) {
	t.Parallel()
	// One replica per partition: with three, acks=all would wait for
	// broker 1 everywhere until it is fenced, as on Kafka.
	c := start(t, containers.Brokers(3), containers.Profile("kafka"), containers.Topic("orders", 3),
		containers.Args("-default-replication-factor", "1"))
	ctx := ctx(t)
	require.Len(t, c.BrokerAddrs(), 3)
	adm := kadm.NewClient(client(t, c))
	md, err := adm.BrokerMetadata(ctx)
	require.NoError(t, err)
	var listed []string
	for _, b := range md.Brokers {
		listed = append(listed, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	assert.ElementsMatch(t, c.BrokerAddrs(), listed, "every broker under its own mapped port")

	require.NoError(t, c.Control().BrokerDown(ctx, 1))
	brokers, err := c.Control().Brokers(ctx)
	require.NoError(t, err)
	require.Len(t, brokers, 3)
	assert.True(t, brokers[1].Down)

	prod := client(t, c, kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, p := range []int32{0, 2} {
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("while 1 is down")}).FirstErr(), "partition %d", p)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = prod.ProduceSync(short, &kgo.Record{Partition: 1, Value: []byte("to the broker that is down")}).FirstErr()
	cancel()
	assert.Error(t, err, "partition 1's leader, broker 1, is down")

	require.NoError(t, c.Control().BrokerUp(ctx, 1))
	require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("after up")}).FirstErr())
	ends, err := adm.ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) {
		assert.GreaterOrEqual(t, o.Offset, int64(1), "partition %d", o.Partition)
	})
}

// TestBadFlagAndVariable: a bad flag or VASTFAKE_* variable makes the
// binary exit non-zero at once; Run fails quoting its message, which the
// container's logs (docker logs, podman logs) show.
func TestBadFlagAndVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  testcontainers.ContainerCustomizer
		want string
	}{
		{"flag", containers.Args("-no-such-flag"), "flag provided but not defined: -no-such-flag"},
		{"variable", testcontainers.WithEnv(map[string]string{"VASTFAKE_BROKERS": "two"}),
			`-brokers (VASTFAKE_BROKERS): "two" from VASTFAKE_BROKERS: want a whole number from 1 to 16`},
		{"value", containers.Profile("strict"), `-profile (VASTFAKE_PROFILE): "strict" from the command line: want vast, kafka or audit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := run(t, tc.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "exited with code 2")
			require.NotNil(t, c, "the container is returned, for its logs")
			logs, err := c.Logs(ctx(t))
			require.NoError(t, err)
			defer logs.Close()
			data, err := io.ReadAll(logs)
			require.NoError(t, err)
			assert.Contains(t, string(data), tc.want)
		})
	}
}

// TestParallelContainers: two containers started at once on random ports
// do not interfere: each has its own ports, topics and records.
func TestParallelContainers(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	cs := make([]*containers.Container, 2)
	errs := make([]error, 2)
	for i := range cs {
		wg.Go(func() { cs[i], errs[i] = run(t, containers.Topic("mine-"+strconv.Itoa(i), 1)) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.NotEqual(t, cs[0].Bootstrap(), cs[1].Bootstrap())
	assert.NotEqual(t, cs[0].Control().URL(), cs[1].Control().URL())
	ctx := ctx(t)
	for i, c := range cs {
		topic := "mine-" + strconv.Itoa(i)
		cl := client(t, c, kgo.DefaultProduceTopic(topic))
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(topic)).FirstErr())
		topics, err := kadm.NewClient(cl).ListTopics(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{topic}, topics.Names(), "container %d has its own topic only", i)
	}
}

// TestSIGTERMExitsAtOnce: docker stop's SIGTERM ends the broker, with a
// consumer connected and fetching, with exit code 0 within the one-second
// grace given here (past it the engine would SIGKILL: exit code 137).
func TestSIGTERMExitsAtOnce(t *testing.T) {
	t.Parallel()
	c := start(t, containers.Brokers(2), containers.Topic("orders", 2))
	ctx := ctx(t)
	// A consumer in the middle of its fetches, connected to both brokers.
	cons := client(t, c, kgo.ConsumeTopics("orders"))
	require.NoError(t, client(t, c, kgo.DefaultProduceTopic("orders")).ProduceSync(ctx, kgo.StringRecord("one")).FirstErr())
	require.Equal(t, 1, cons.PollFetches(ctx).NumRecords())
	polling := make(chan struct{})
	go func() {
		defer close(polling)
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		cons.PollFetches(short)
	}()
	t.Cleanup(func() { <-polling })
	grace := time.Second
	require.NoError(t, c.Stop(ctx, &grace))
	state, err := c.State(ctx)
	require.NoError(t, err)
	assert.False(t, state.Running)
	assert.Equal(t, 0, state.ExitCode)
}

// TestToken: with Token the control plane requires the token; Run and
// Control send it, and a client without it gets 401 and changes nothing.
func TestToken(t *testing.T) {
	t.Parallel()
	c := start(t, containers.Token("s3cret"))
	ctx := ctx(t)
	before, err := c.Control().Advertised(ctx)
	require.NoError(t, err)
	assert.Equal(t, c.BrokerAddrs(), before)
	anon := containers.NewControl(c.Control().URL(), "")
	err = anon.SetAdvertised(ctx, "elsewhere:1")
	var e *containers.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 401, e.Status)
	require.NoError(t, anon.Healthz(ctx), "GET /healthz needs no token")
	after, err := c.Control().Advertised(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	assert.True(t, strings.HasPrefix(c.Control().URL(), "http://"))
}

// TestTLS: with TLS the listener speaks TLS only, under a certificate that
// names the advertised host; a client that trusts it produces and reads
// back, and one that does not trust it fails.
func TestTLS(t *testing.T) {
	t.Parallel()
	needEngine(t)
	// The host clients dial is the one Testcontainers reaches the
	// container on: localhost, or where the tests themselves run in a
	// container, the bridge's gateway.
	provider, err := testcontainers.NewDockerProvider()
	require.NoError(t, err)
	defer provider.Close()
	host, err := provider.DaemonHost(ctx(t))
	require.NoError(t, err)
	certPEM, keyPEM, err := fixtures.SelfSignedCert(host, "localhost", "127.0.0.1", "::1")
	require.NoError(t, err)
	c := start(t, containers.TLS(certPEM, keyPEM), containers.Topic("secure", 1))
	ctx := ctx(t)
	cl := client(t, c, kgo.DefaultProduceTopic("secure"), kgo.ConsumeTopics("secure"))
	require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("over TLS")).FirstErr())
	fs := cl.PollFetches(ctx)
	require.NoError(t, fs.Err())
	require.Equal(t, 1, fs.NumRecords())
	assert.Equal(t, "over TLS", string(fs.Records()[0].Value))

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	untrusting := client(t, c, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	assert.Error(t, untrusting.Ping(short), "the certificate is self-signed: a client must trust it")
}

// TestHTTPContract follows the Containers page's recipe for languages
// without a helper, with Testcontainers' generic container and plain HTTP
// (no containers.Run): expose 9092 and 8080 on random ports, wait for
// GET /healthz, PUT the mapped address to /advertise; a client then
// produces through the mapped port.
func TestHTTPContract(t *testing.T) {
	t.Parallel()
	needEngine(t)
	ctx := ctx(t)
	ctr, err := testcontainers.Run(ctx, testImage,
		testcontainers.WithExposedPorts("9092/tcp", "8080/tcp"),
		testcontainers.WithCmdArgs("-topic", "orders:1"),
		testcontainers.WithLabels(runLabel),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/healthz").WithPort("8080/tcp")))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	host, err := ctr.Host(ctx)
	require.NoError(t, err)
	kafkaPort, err := ctr.MappedPort(ctx, "9092/tcp")
	require.NoError(t, err)
	httpPort, err := ctr.MappedPort(ctx, "8080/tcp")
	require.NoError(t, err)
	bootstrap := net.JoinHostPort(host, kafkaPort.Port())

	body := `{"addresses": ["` + bootstrap + `"]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+net.JoinHostPort(host, httpPort.Port())+"/advertise", strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic("orders"), kgo.DisableIdempotentWrite())
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord("through the recipe")).FirstErr())
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	require.NoError(t, err)
	assert.Equal(t, bootstrap, net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))))
}
