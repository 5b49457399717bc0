// Types of vastfake/containers: vastfake's container image over
// Testcontainers (the testcontainers package, an optional peer dependency).

/// <reference types="node" />

import type { Client } from './index'

export interface ContainerOptions {
  /** The image; "vastfake:latest" (go run ./cmd/vastimage -o vastfake.tar, then docker load or podman load) by default. */
  image?: string
  /** "vast" (the default), "kafka" or "audit". */
  profile?: 'vast' | 'kafka' | 'audit' | string
  /** Topics to create at start: "name[:partitions[:key=value,...]]". */
  topics?: string[]
  /** Rule overrides: {MaxGroups: 10} or ["MaxGroups=10"]. */
  rules?: Record<string, string | number | boolean | string[]> | string[]
  /** The broker's clock moves only by advance(). */
  manualClock?: boolean
  /** Broker ids (1 to 16, default 1), each on its own container port (9092, 9093, ...) mapped to its own host port. */
  brokers?: number
  /** More flags of the binary, after the image name, e.g. ["-log-level", "debug"]. */
  args?: string[]
  /** Environment variables of the container (VASTFAKE_* set every flag). */
  env?: Record<string, string>
  /** The control plane's token (-http-token); the client sends it. */
  token?: string
  /** Labels of the container. */
  labels?: Record<string, string>
  /** How long to wait for GET /healthz (60 000). */
  startTimeoutMs?: number
  /** How long stop() waits after SIGTERM before SIGKILL (10 000). */
  stopTimeoutMs?: number
  /** Each control plane call's timeout (10 000). */
  timeoutMs?: number
  /** Each wait's deadline (30 000). */
  waitTimeoutMs?: number
  /** Given the testcontainers GenericContainer before it starts, for any other option (a network, a log consumer). */
  customize?: (container: any) => any
}

/** A running vastfake container; a Client of its control plane. */
export class Container extends Client {
  /** The testcontainers StartedTestContainer. */
  readonly container: any
  /** "host:port" of broker id 0 on the host, for any Kafka client. */
  readonly bootstrap: string
  /** Every broker id's "host:port" on the host, in id order. */
  readonly addresses: string[]
  readonly id: string
  /** SIGTERM, then remove the container. */
  stop (): Promise<void>
  /** stop(), for `await using c = await startContainer()`. */
  [Symbol.asyncDispose] (): Promise<void>
}

/** Start the image with random host ports, advertise them (PUT /advertise) and wait on GET /healthz. */
export function startContainer (options?: ContainerOptions): Promise<Container>
export const DEFAULT_IMAGE: string
export const KAFKA_PORT: number
export const HTTP_PORT: number
