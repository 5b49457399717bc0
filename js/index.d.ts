// Types of the vastfake package: the launcher and the control plane's
// answers, as the binary serves them (see docs/control-plane.md).

/// <reference types="node" />

/** A Go duration string ("30s", "1h30m") or milliseconds. */
export type Duration = string | number

export interface StartOptions {
  /** "vast" (the default), "kafka" or "audit". */
  profile?: 'vast' | 'kafka' | 'audit' | string
  /** The Kafka release the kafka and audit profiles follow where 4.x releases differ (-kafka-version): "4.0" to "4.3", the default. */
  kafkaVersion?: '4.0' | '4.1' | '4.2' | '4.3' | string
  /** Topics to create at start: "name[:partitions[:key=value,...]]". */
  topics?: string[]
  /** Rule overrides: {MaxGroups: 10} or ["MaxGroups=10"]. */
  rules?: Record<string, string | number | boolean | string[]> | string[]
  /** The broker's clock moves only by advance(). */
  manualClock?: boolean
  /** Broker ids, each on its own address (1 to 16, default 1); bootstrap is the first. */
  brokers?: number
  /** More command-line flags, e.g. ["-log-level", "debug"]. */
  args?: string[]
  /** The Kafka listener's address; a free port on 127.0.0.1 by default. */
  listen?: string
  /** The control plane's address; a free port on 127.0.0.1 by default. */
  http?: string
  /** The binary; else VASTFAKE_BIN, vastfake on PATH, or go build in a checkout. */
  binary?: string
  /** Extra environment variables for the binary. */
  env?: Record<string, string>
  /** How long to wait for the broker to listen (30 000). */
  startTimeoutMs?: number
  /** How long stop() waits after SIGTERM before SIGKILL (10 000). */
  stopTimeoutMs?: number
  /** Each control plane call's timeout (10 000). */
  timeoutMs?: number
  /** Each wait's deadline (30 000). */
  waitTimeoutMs?: number
}

export interface Health { status: string; bootstrap: string; kafkaVersion: string }
export interface Clock { now: string; manual: boolean }

export interface Partition {
  partition: number
  logStartOffset: number
  highWatermark: number
  bytes: number
  /** The broker id that leads it (moveLeader moves it). */
  leader: number
  leaderEpoch: number
  /** Broker ids holding a replica, the preferred leader first. */
  replicas: number[]
  /** Broker ids in the in-sync replica set. */
  isr: number[]
}
/** One broker id of GET /brokers: where it listens, and what Metadata tells clients. */
export interface BrokerInfo { id: number; addr: string; advertised: string; down: boolean }
export interface Topic { name: string; id: string; configs: Record<string, string>; partitions: Partition[] }

export interface RecordHeader { key: string; value: Buffer | null }
export interface KafkaRecord {
  offset: number
  timestampMs: number
  /** RFC 3339; null for a year outside 0-9999. */
  timestamp: string | null
  key: Buffer | null
  value: Buffer | null
  headers: RecordHeader[]
  logAppendTime: boolean
  compressed: boolean
  /** The producer id of an idempotent or transactional producer's record, 0 for others. */
  producerId: number
  /** "commit" or "abort" for a transaction marker, which consumers never see; "" for data. */
  marker: '' | 'commit' | 'abort'
  /** "committed", "aborted" or "open" for a record written in a transaction; "" otherwise. */
  transaction: '' | 'committed' | 'aborted' | 'open'
  /** The JSON the control plane sent. */
  raw: Record<string, unknown>
}
/** A transactional id as GET /transactions shows it (kafka and audit profiles). */
export interface Transaction {
  transactionalId: string
  producerId: number
  producerEpoch: number
  /** Kafka's: Empty, Ongoing, CompleteCommit or CompleteAbort. */
  state: string
  timeoutMs: number
  /** When the open transaction began; absent when none is open. */
  start?: string
  partitions: Array<{ topic: string; partition: number }>
  groups: string[]
  committed: number
  aborted: number
  timedOut: number
}
export interface RecordsPage { records: KafkaRecord[]; nextOffset: number | null }

/** Topic to its partitions. */
export type Assignment = Record<string, number[]>

export interface Member {
  memberId: string
  instanceId?: string
  clientId: string
  clientHost: string
  /** null before a rebalance hands one out; for a KIP-848 member, what it may consume now. */
  assignment: Assignment | null
  /** A KIP-848 member's epoch (absent for a classic member). */
  memberEpoch?: number
  /** STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS (KIP-848). */
  memberState?: string
  /** A KIP-848 member's target assignment. */
  targetAssignment?: Assignment
  /** Partitions a KIP-848 member must still revoke before others get them. */
  revoking?: Assignment
}
export interface GroupPartition {
  topic: string
  partition: number
  /** null when the group committed nothing here. */
  committed: number | null
  metadata?: string
  highWatermark: number
  /** The high watermark minus the committed offset; null when nothing is committed. */
  lag: number | null
  ownerMemberId?: string
  ownerClientId?: string
}
/** Consecutive records a share group member holds (KIP-932). */
export interface AcquiredRecords {
  firstOffset: number
  lastOffset: number
  memberId: string
  clientId: string
  deliveryCount: number
  /** When the acquisition lock ends, on the broker's clock (RFC 3339). */
  lockDeadline: string
}
/** A share group's state of one partition (KIP-932). */
export interface SharePartition {
  topic: string
  partition: number
  /** Every record before it was acknowledged or archived. */
  startOffset: number
  endOffset: number
  highWatermark: number
  inFlight: number
  available: number
  acquired: AcquiredRecords[]
  acknowledged: number
  archived: number
  /** Records up to the high watermark not yet acknowledged or archived. */
  lag: number
}
export interface Group {
  name: string
  state: string
  protocolType: string
  protocol: string
  generation: number
  leader: string
  members: Member[]
  partitions: GroupPartition[]
  /** "classic", "consumer" for a KIP-848 consumer group (group.protocol=consumer), "share" for a KIP-932 share group. */
  groupProtocol: 'classic' | 'consumer' | 'share'
  /** A consumer group's group epoch and the epoch of its target assignment (0 for a classic group). */
  groupEpoch: number
  assignmentEpoch: number
  /** Stable, with every member at its target assignment. */
  reconciled: boolean
  /** A share group's partitions with share state. */
  sharePartitions?: SharePartition[]
}
export interface Rebalance {
  time: string
  group: string
  generation: number
  /** Stable, or Empty when no member rejoined. */
  state: string
  protocol: string
  members: Array<{ memberId: string; clientId: string; assignment: Assignment | null }>
}
export interface Request {
  time: string
  api: string
  version: number
  clientId: string
  /** The broker id that served it. */
  broker: number
  errorCode: number
  /** The Kafka error's name. */
  error?: string
  /** The VAST rule (a rules.Rules field) behind a refusal. */
  rule?: string
  fault?: boolean
  user?: string
  denied?: string
  closed?: boolean
  /** What the client was told with the error. */
  message?: string
  repeats?: number
  /** The audited rule of the first finding the request caused (audit profile). */
  finding?: string
  /** Every rule the request broke, when more than one. */
  rules?: string[]
  findings?: string[]
  /** For a Fetch when the broker runs with -fetch-detail: what each partition returned. */
  fetch?: FetchDetail
}
/** What the partitions of one Fetch returned (-fetch-detail): at most 64, omitted counting more. */
export interface FetchDetail { partitions: FetchPartition[]; omitted?: number }
export interface FetchPartition {
  topic: string
  partition: number
  fetchOffset: number
  /** Records and bytes the answer carried. */
  records: number
  bytes: number
  highWatermark: number
  errorCode: number
  error?: string
}
export interface Finding {
  rule: string
  kind: string
  source: string
  clientId: string
  clientSoftware: string
  clientVersion: string
  /** The requests' API, "InitProducerID"; "" for a finding no request caused. */
  api: string
  topic: string
  group: string
  count: number
  first: string
  last: string
  advice: string
  detail: string
}
/** An error answered without a VAST rule: by API, client and error, with counts and advice. */
export interface ErrorCount {
  api: string
  error: string
  code: number
  clientId: string
  clientSoftware: string
  clientVersion: string
  /** The topic and group the first answer's error was about, when it names one. */
  topic: string
  group: string
  /** Clients retry it on their own. */
  retriable: boolean
  /** A protocol step every client recovers from (a rebalance in progress, a coordinator moving): never a failure. */
  routine: boolean
  /** The rule of the finding that already explains it; the report counts it there. */
  finding?: string
  count: number
  first: string
  last: string
  detail: string
  advice: string
}
/** How many consumer groups a client created, and how many are empty now. */
export interface GroupsCreated { clientId: string; clientSoftware: string; clientVersion: string; created: number; empty: number }
/** What compact() did to one partition. */
export interface Compaction {
  partition: number
  /** Whether the log changed. */
  compacted: boolean
  /** The offset the cleanable range ended at; the tail from it on stays as it is. */
  cleanedTo: number
  recordsRemoved: number
  /** Of recordsRemoved, the tombstones past their delete horizon. */
  tombstonesRemoved: number
  /** Of the cleanable range. */
  bytesBefore: number
  bytesAfter: number
}
export interface Fault {
  /** "Produce", or the API key. */
  api: string | number
  /** "NOT_LEADER_FOR_PARTITION", or the error code; not needed with dropAnswer. */
  err?: string | number
  /** 0: until cleared. */
  count?: number
  topic?: string
  /** One partition of topic; every one when neither this nor partitions is given. */
  partition?: number
  /** Some partitions of topic. */
  partitions?: number[]
  group?: string
  /** Only requests reaching this broker id (several brokers). */
  broker?: number
  /** Handle the request, then close the connection instead of answering. */
  dropAnswer?: boolean
}
export interface WaitOptions { timeoutMs?: number }

export class Client {
  constructor (url: string, options?: { token?: string; timeoutMs?: number; waitTimeoutMs?: number })
  url: string
  token?: string
  timeoutMs: number
  waitTimeoutMs: number

  health (): Promise<Health>
  rules (): Promise<Record<string, unknown>>
  clock (): Promise<Clock>
  topics (): Promise<Topic[]>
  topic (name: string): Promise<Topic>
  endOffset (topic: string, partition?: number): Promise<number>
  recordsPage (topic: string, partition?: number, options?: { offset?: number; limit?: number }): Promise<RecordsPage>
  iterRecords (topic: string, partition?: number, options?: { offset?: number; pageSize?: number }): AsyncGenerator<KafkaRecord>
  records (topic: string, partition?: number, options?: { offset?: number }): Promise<KafkaRecord[]>
  /** The values as UTF-8 strings, null for a null value. */
  values (topic: string, partition?: number): Promise<Array<string | null>>
  groups (): Promise<Group[]>
  group (name: string): Promise<Group>
  findGroup (name: string): Promise<Group | null>
  committed (group: string, topic: string, partition?: number): Promise<number | null>
  lag (group: string, topic: string, partition?: number): Promise<number | null>
  transactions (options?: { openOnly?: boolean }): Promise<Transaction[]>
  transaction (transactionalId: string): Promise<Transaction>
  rebalances (options?: { group?: string }): Promise<Rebalance[]>
  requests (options?: { rule?: string; api?: string | number; limit?: number; broker?: number }): Promise<Request[]>
  refusals (rule?: string): Promise<Request[]>
  findings (): Promise<Finding[]>
  /** GET /audit: errors answered without a VAST rule, by API, client and error (every profile). */
  errors (): Promise<ErrorCount[]>
  /** GET /audit: consumer groups each client created, most first. */
  groupsCreated (): Promise<GroupsCreated[]>
  /** DELETE /audit: forget every finding. */
  clearFindings (): Promise<void>
  live (): Promise<Record<string, unknown>>

  clearRequests (): Promise<void>
  injectFault (fault: Fault): Promise<Record<string, unknown>>
  failNext (api: string | number, err: string | number, n?: number, scope?: { topic?: string; partition?: number; partitions?: number[]; group?: string }): Promise<Record<string, unknown>>
  clearFaults (): Promise<void>
  latency (api: string | number, d: Duration, broker?: number): Promise<string>
  dropConnections (broker?: number): Promise<void>
  failover (): Promise<void>
  restart (): Promise<void>
  /** GET /advertise: the "host:port" Metadata hands to clients for each broker id, in order. */
  advertised (): Promise<string[]>
  /** PUT /advertise: one "host:port" per broker id, in order; Metadata answers them at once. Resolves to them. */
  setAdvertised (addresses: string[]): Promise<string[]>
  brokers (): Promise<BrokerInfo[]>
  /** The address refuses connections while the other brokers serve; ControlPlaneError 404 (no such broker) or 409 (down already). */
  brokerDown (brokerId: number): Promise<void>
  /** The broker serves again; ControlPlaneError 404 or 409 (it is up). */
  brokerUp (brokerId: number): Promise<void>
  /** A VAST virtual-IP failover of that address: connections reset, refused for blackout, then served again. */
  failOverAddress (brokerId: number, blackout?: Duration): Promise<void>
  /** The partition's leader moves to brokerId, leader epoch + 1; ControlPlaneError 404 for no such partition or broker. */
  moveLeader (topic: string, partition: number, brokerId: number): Promise<{ leader: number; leaderEpoch: number }>
  /** The group's coordinator moves to brokerId; ControlPlaneError 404 for no such broker. */
  moveCoordinator (group: string, brokerId: number): Promise<void>
  reset (): Promise<void>
  staleEndOffset (d: Duration): Promise<string>
  advance (d: Duration): Promise<Clock>
  /** Compact a cleanup.policy=compact topic now; ControlPlaneError 404 (no topic) or 409 (not compacted). */
  compact (topic: string): Promise<Compaction[]>
  /** The partition's next batch starts n offsets past its end; ControlPlaneError 404 (no partition) or 400 (n < 1). */
  skipOffsets (topic: string, partition: number, n: number): Promise<void>

  assertRefused (rule: string, options?: { api?: string }): Promise<Request[]>
  assertNoRefusals (): Promise<void>
  assertNoFindings (): Promise<void>
  assertCommitted (group: string, topic: string, partition: number, offset: number): Promise<void>
  /** Assert that share group has completed every record of the partition up to offset (KIP-932). */
  assertShareAcknowledged (group: string, topic: string, partition: number, offset: number): Promise<void>

  waitFor<T> (what: string, cond: () => T | Promise<T>, options?: { timeoutMs?: number; describe?: () => string | Promise<string> }): Promise<NonNullable<T>>
  waitGroup (group: string, options?: { state?: string; members?: number; timeoutMs?: number }): Promise<Group>
  waitGroupStable (group: string, options?: { members?: number; timeoutMs?: number }): Promise<Group>
  /** Wait until group is Stable and every member has its target assignment (KIP-848: nothing left to revoke or release). */
  waitGroupReconciled (group: string, options?: { members?: number; timeoutMs?: number }): Promise<Group>
  waitCommitted (group: string, topic: string, partition: number, offset: number, options?: WaitOptions): Promise<void>
  /** Wait until share group has completed every record of the partition up to offset. */
  waitShareAcknowledged (group: string, topic: string, partition: number, offset: number, options?: WaitOptions): Promise<void>
  waitRefused (rule: string, options?: WaitOptions): Promise<Request[]>
  /** Wait until broker id broker answered a request of api without an error: the client moved there. */
  waitServed (api: string | number, broker: number, options?: WaitOptions): Promise<Request[]>
  waitEndOffset (topic: string, partition: number, offset: number, options?: WaitOptions): Promise<void>
}

export class Broker extends Client {
  /** "127.0.0.1:<port>", for any Kafka client. */
  bootstrap: string
  readonly pid: number
  readonly running: boolean
  /** The broker's first and last stderr lines. */
  stderrTail (): string
  /** SIGTERM, then SIGKILL after stopTimeoutMs; resolves to the exit code. */
  stop (): Promise<number | null>
  /** stop(), for `await using broker = await startBroker()`. */
  [Symbol.asyncDispose] (): Promise<void>
}

export function startBroker (options?: StartOptions): Promise<Broker>
/**
 * The vastfake binary: VASTFAKE_BIN, else the one the installed platform
 * package (@vastfake/linux-x64 and so on) carries, else vastfake on PATH,
 * else one built with go build from VASTFAKE_SRC or the vastfake checkout
 * the working directory or the package is in, without blocking the event
 * loop, said on stderr and cached on disk (VASTFAKE_CACHE_DIR, else the
 * user's cache directory) until the sources change.
 */
export function findBinary (options?: { buildTimeoutMs?: number }): Promise<string>
/** The binary the installed platform package carries, or null when there is none. */
export function carriedBinary (): string | null
export function goDuration (d: Duration): string

export class VastfakeError extends Error {}
export class BinaryNotFoundError extends VastfakeError {}
export class StartError extends VastfakeError { stderr: string; exitCode?: number | null; signal?: string | null }
export class PortInUseError extends StartError {}
export class BrokerDiedError extends VastfakeError { stderr: string; exitCode: number | null; signal: string | null }
export class ControlPlaneError extends VastfakeError { status: number | null; error: string }
export class WaitTimeout extends VastfakeError { code: 'ERR_ASSERTION' }
/** WaitTimeout by the name Python's package gives it: the same class. */
export declare const WaitTimeoutError: typeof WaitTimeout
export type WaitTimeoutError = WaitTimeout
export class AssertionError extends VastfakeError { code: 'ERR_ASSERTION' }
