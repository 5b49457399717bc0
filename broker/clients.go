package broker

// Client identity: which client software a connection runs, from what
// ApiVersions said or from the versions it asks for, remembered per client
// id for its other connections; and which app and client library that is,
// so that the request log, the audit's findings and its advice name the
// client in its own terms.

import (
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fingerprint recognises, from the versions a connection asks for, the
// clients that do not name themselves in ApiVersions v3+, so that audit
// advice speaks their configuration whatever client id the app set:
//   - kafkajs 2.x opens with ApiVersions v2;
//   - kafka-python 2.0 and kafka-go open with ApiVersions v0; then
//     kafka-python asks for Metadata v0-v1 or Produce up to v7, kafka-go for
//     Metadata or Produce v8 and above;
//   - older sarama releases set below Version 2.4 (and any sarama with
//     ApiVersionsRequest off) sends no ApiVersions and opens with Metadata
//     v2 or above; kafka-python's connections after the first send no
//     ApiVersions either, and open with Metadata v0-v1.
//
// A connection that opens with Produce is not told apart here: the broker's
// clientSoftware names it from its client id's other connections. kgo,
// librdkafka (and the clients built on it), sarama otherwise, and the Java
// client send ApiVersions v3+ and name themselves.
func (c *clientConn) fingerprint(key, version int16) {
	if c.opening == 0 {
		c.opening = -1
		if key == int16(kmsg.ApiVersions) {
			c.opening = version + 1
		}
	}
	metadata, produce := key == int16(kmsg.Metadata), key == int16(kmsg.Produce)
	switch c.opening {
	case 3:
		c.inferred = "kafkajs"
	case 1:
		switch {
		case metadata && version <= 1, produce && version <= 7:
			c.inferred = "kafka-python"
		case metadata && version >= 8, produce && version >= 8:
			c.inferred = "kafka-go"
		}
	case -1:
		switch {
		case metadata && version <= 1:
			c.inferred = "kafka-python"
		case metadata:
			c.inferred = "sarama"
		}
	}
}

// softwareLabel names the connection's client software for findings: what
// ApiVersions said, else what fingerprint recognised, else "".
func (c *clientConn) softwareLabel() (software, version string) {
	switch {
	case c.software != "":
		return c.software, c.softwareVersion
	case c.inferred != "":
		return c.inferred + " (recognised by its requests)", ""
	}
	return "", ""
}

// noteSoftware takes the client's software name and version from an
// ApiVersions request newer than the broker knows (hdr is the frame after
// the api key, version and correlation id), reading its start as version
// known: the name and version come first in every version since v3, and a
// client that gets UNSUPPORTED_VERSION may carry on without asking again
// (kgo does). Fields that follow and do not parse are ignored.
func (c *clientConn) noteSoftware(known int16, hdr []byte) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(known)
	body, _, err := parseRequestHeader(hdr, true)
	if err != nil {
		return
	}
	_ = req.ReadFrom(body) // the fields read before an error are set
	if req.ClientSoftwareName == "" {
		return
	}
	c.software, c.softwareVersion = clip(req.ClientSoftwareName), clip(req.ClientSoftwareVersion)
}

// noteClientID takes the client id from the header of a request that is not
// parsed further (hdr is the frame after the api key, version and
// correlation id): the id comes before anything that differs by version.
func (c *clientConn) noteClientID(hdr []byte) {
	if _, id, err := parseRequestHeader(hdr, false); err == nil && string(id) != c.clientID {
		c.clientID = string(id)
	}
}

// clientOf returns the client id of r's client and the software it runs,
// as findings name them.
func (b *Broker) clientOf(r *request) (clientID, software, version string) {
	clientID = clip(r.clientID)
	if r.conn != nil {
		software, version = r.conn.softwareLabel()
	}
	if software == "" {
		software, version = b.clientSoftware.lookup(r.clientID)
	}
	return clientID, software, version
}

// maxClientSoftware bounds clientSoftware: past it, the oldest half is
// forgotten. A client id is clipped, so the memory stays under a few MB.
const maxClientSoftware = 4096

// clientSoftwareMemory remembers, per client id, the software a connection
// named or was recognised as, so that a connection of the same client that
// gives no sign of itself (kafka-python and older sarama open their
// connections to a partition's leader straight with Produce) is named in
// findings too. The zero value is ready to use.
type clientSoftwareMemory struct {
	mu sync.Mutex
	m  map[string]rememberedSoftware
	n  uint64 // remember calls, for age
}

type rememberedSoftware struct {
	software, version string
	at                uint64
}

// remember notes that clientID runs software at version.
func (m *clientSoftwareMemory) remember(clientID, software, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]rememberedSoftware)
	}
	if len(m.m) >= maxClientSoftware {
		var ages []uint64
		for _, r := range m.m {
			ages = append(ages, r.at)
		}
		slices.Sort(ages)
		cut := ages[len(ages)/2]
		for id, r := range m.m {
			if r.at < cut {
				delete(m.m, id)
			}
		}
	}
	m.n++
	m.m[clip(clientID)] = rememberedSoftware{software, version, m.n}
}

// lookup returns the software remembered for clientID, or "".
func (m *clientSoftwareMemory) lookup(clientID string) (software, version string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.m[clip(clientID)]
	return r.software, r.version
}

// Apps whose own configuration advice speaks, recognised by their client
// id or the software name they send (appOf).
const (
	appOTelCollector = "otel-collector"
	appRsyslog       = "rsyslog"
	appSyslogNG      = "syslog-ng"
	appKcat          = "kcat"
)

// appOf names the app a client is, from its software name or client id:
// the OpenTelemetry Collector's kafka receiver and exporter (client_id
// "otel-collector" by default), rsyslog's omkafka and imkafka, syslog-ng's
// kafka-c() destination and kcat (kafkacat), when their name appears in
// either; "" for any other.
func appOf(software, clientID string) string {
	app := appNamed(software, clientID)
	if family := clientFamily(software, clientID); app != "" && family != "" && !slices.Contains(appFamilies[app], family) {
		return "" // another library's client that took the app's name
	}
	return app
}

// appFamilies are the client libraries each app is built on: the
// Collector's kafka receiver and exporter on franz-go (sarama before
// v0.125), rsyslog's omkafka and imkafka, syslog-ng's kafka-c() and kcat on
// librdkafka. An app is recognised only on a client of one of them (or of
// a library not known), so that kcat run with client id "otel-collector"
// never gets the Collector's YAML.
var appFamilies = map[string][]string{
	appOTelCollector: {familyFranz, familySarama},
	appRsyslog:       {familyLibrdkafka},
	appSyslogNG:      {familyLibrdkafka},
	appKcat:          {familyLibrdkafka},
}

// appsEmbedding lists the known apps built on a client library that send
// its default client id unless configured otherwise, in the order their
// advice is given. The Collector is not one: its default client id,
// "otel-collector", names it.
func appsEmbedding(family string) []string {
	var out []string
	for _, app := range []string{appRsyslog, appSyslogNG, appKcat} {
		if slices.Contains(appFamilies[app], family) {
			out = append(out, app)
		}
	}
	return out
}

// libraryDefaultID reports whether clientID is the client id a library
// sends when the app sets none (librdkafka's "rdkafka", kgo's "kgo",
// sarama's "sarama"): the app could then be any that embeds it.
func libraryDefaultID(clientID string) bool {
	switch strings.ToLower(clientID) {
	case "rdkafka", "kgo", "sarama", "":
		return true
	}
	return false
}

// appNamed names the app a software name or client id names, or "".
func appNamed(software, clientID string) string {
	for _, s := range []string{strings.ToLower(software), strings.ToLower(clientID)} {
		switch {
		case strings.Contains(s, "otel-collector"), strings.Contains(s, "otelcol"):
			return appOTelCollector
		case strings.Contains(s, "rsyslog"):
			return appRsyslog
		case strings.Contains(s, "syslog-ng"), strings.Contains(s, "syslogng"):
			return appSyslogNG
		case strings.Contains(s, "kcat"), strings.Contains(s, "kafkacat"):
			return appKcat
		}
	}
	return ""
}

// Client families advice is written for.
const (
	familyLibrdkafka = "librdkafka"
	familyFranz      = "franz-go"
	familySarama     = "sarama"
	familyKafkaGo    = "kafka-go"
	familyKafkaJS    = "kafkajs"
	familyJava       = "java"
	familyKafkaPy    = "kafka-python"
	familyKafkaTS    = "@kafkats/client"
)

// clientFamily names the client library from what ApiVersions said, or
// else from the client id's default form; "" when unknown.
func clientFamily(software, clientID string) string {
	s := strings.ToLower(software)
	switch {
	case strings.Contains(s, "librdkafka"), strings.Contains(s, "confluent-kafka"), strings.Contains(s, "rdkafka"),
		strings.Contains(s, "kcat"), strings.Contains(s, "kafkacat"):
		return familyLibrdkafka
	case s == "kgo", strings.Contains(s, "franz"):
		return familyFranz
	case strings.Contains(s, "sarama"):
		return familySarama
	case strings.Contains(s, "kafka-python"):
		return familyKafkaPy
	case strings.Contains(s, "kafka-go"), strings.Contains(s, "segmentio"):
		return familyKafkaGo
	case strings.Contains(s, "kafkajs"):
		return familyKafkaJS
	case strings.Contains(s, "kafkats"):
		return familyKafkaTS
	case strings.Contains(s, "java"):
		return familyJava
	}
	id := strings.ToLower(clientID)
	switch {
	case strings.Contains(id, "rdkafka"):
		return familyLibrdkafka
	case id == "kgo":
		return familyFranz
	case id == "sarama":
		return familySarama
	case strings.HasPrefix(id, "kafkajs"):
		return familyKafkaJS
	case strings.HasPrefix(id, "consumer-"), strings.HasPrefix(id, "producer-"), strings.HasPrefix(id, "adminclient-"):
		return familyJava
	}
	return ""
}

// clientLabel describes a client by its software, version and client id.
func clientLabel(software, version, clientID string) string {
	var s string
	switch {
	case software != "" && version != "":
		s = software + " " + version
	case software != "":
		s = software
	}
	if clientID != "" {
		if s != "" {
			s += ", "
		}
		s += "client id " + clientID
	}
	if s == "" {
		s = "(no client)"
	}
	return s
}

// rememberSoftware tells the broker's clientSoftware, once per connection,
// the software c runs under clientID, as soon as c has named or shown it,
// so that its client's other connections are named too.
func (c *clientConn) rememberSoftware(clientID string) {
	if c.remembered {
		return
	}
	if sw, v := c.softwareLabel(); sw != "" {
		c.remembered = true
		c.b.clientSoftware.remember(clientID, sw, v)
	}
}
