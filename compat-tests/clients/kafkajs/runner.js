#!/usr/bin/env node
// Strata compat-tests runner for kafkajs.
//
// Protocol: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]; prints exactly one JSON
// object {"result":"pass"|"fail"|"skip","detail":"...","data":{...}} as its last stdout line and exits 0.
// kafkajs logs go to stderr (WARN and up).
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const {
  Kafka,
  CompressionTypes,
  CompressionCodecs,
  ConfigResourceTypes,
  Partitioners,
  logLevel,
} = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4js = require('lz4js')
const zstd = require('@bokuweb/zstd-wasm')
const auth = require('./auth')

const CLIENT = 'kafkajs'
const BUDGET_MS = 45000

// The scenario data every runner (Go, Python, kafkajs, Java) reads.
const DATA = JSON.parse(require('fs').readFileSync(require('path').join(__dirname, '..', '..', 'scenarios', 'scenarios.json'), 'utf8'))
const PRODUCE_SET = DATA.produce_consume.records
const HEADERS = DATA.headers.headers.map(h => [h.key, Buffer.from(h.value_hex, 'hex')])
const CROSS = DATA.cross.records
const CROSS_HEADER = DATA.cross.header
const ALTER_RETENTION_MS = DATA.alter_configs.retention_ms
const DYNAMIC_TOPIC_CONFIG = DATA.alter_configs.source
const groupName = topic => DATA.group.split('{topic}').join(topic)

// HEADERS as kafkajs models headers: an object whose key holds its values in order (an array when repeated).
function headersObject() {
  const o = {}
  for (const [k, v] of HEADERS) (o[k] = o[k] || []).push(v)
  for (const k of Object.keys(o)) if (o[k].length === 1) o[k] = o[k][0]
  return o
}

// ------------------------------------------------------------------ codecs
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
// lz4js writes frames without the block-independence flag, which Kafka's broker rejects ("Dependent block
// stream is unsupported"), so frames are assembled here from lz4js blocks with a fresh hash table per block.
const lz4xxh = require('lz4js/xxh32.js')
function lz4Frame(src) {
  const maxBlock = 64 * 1024 // BD 4: 64 KB blocks
  const parts = [Buffer.from([0x04, 0x22, 0x4d, 0x18])]
  const desc = Buffer.from([0x40 | 0x20, 4 << 4]) // version 01, block independence; block max size 64 KB
  parts.push(desc, Buffer.from([(lz4xxh.hash(0, desc, 0, 2) >> 8) & 0xff]))
  const blockBuf = Buffer.alloc(lz4js.compressBound(maxBlock))
  for (let off = 0; off < src.length; off += maxBlock) {
    const n = Math.min(maxBlock, src.length - off)
    const size = Buffer.alloc(4)
    const c = lz4js.compressBlock(src, blockBuf, off, n, new Uint32Array(1 << 16))
    if (c === 0 || c >= n) {
      size.writeUInt32LE((0x80000000 | n) >>> 0)
      parts.push(size, Buffer.from(src.subarray(off, off + n)))
    } else {
      size.writeUInt32LE(c)
      parts.push(size, Buffer.from(blockBuf.subarray(0, c)))
    }
  }
  parts.push(Buffer.alloc(4)) // end mark
  return Buffer.concat(parts)
}
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress(encoder) {
    return lz4Frame(encoder.buffer)
  },
  async decompress(buffer) {
    return Buffer.from(lz4js.decompress(buffer))
  },
})
let zstdReady = null
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  async compress(encoder) {
    await (zstdReady = zstdReady || zstd.init())
    return Buffer.from(zstd.compress(encoder.buffer, 3))
  },
  async decompress(buffer) {
    await (zstdReady = zstdReady || zstd.init())
    return Buffer.from(zstd.decompress(buffer, { defaultHeapSize: 16 * 1024 * 1024 }))
  },
})

// ------------------------------------------------------------------ plumbing
class Outcome extends Error {
  constructor(result, detail) {
    super(detail)
    this.result = result
  }
}
const fail = detail => new Outcome('fail', detail)

// Why a topic of n partitions with these leaders is not ready ('' when it is).
function notReady(brokers, leaders, n) {
  if (leaders.length !== n) return `${leaders.length} partitions`
  for (let p = 0; p < n; p++) {
    if (!(leaders[p] >= 0)) return `partition ${p} has no leader`
    if (brokers && !brokers.includes(leaders[p])) return `partition ${p}: leader ${leaders[p]} is not among the brokers ${JSON.stringify(brokers)}`
  }
  return ''
}

// describe_topic's check of one partition of a topic created with replication factor rf: rf distinct
// replicas, the leader among them, the ISR the same set.
function checkReplicas(partition, leader, replicas, isr, rf) {
  const set = new Set(replicas)
  const ok = leader >= 0 && replicas.length === rf && set.size === rf && set.has(leader) && isr.length === rf && isr.every(r => set.has(r)) && new Set(isr).size === rf
  if (!ok) throw fail(`partition ${partition}: leader ${leader} replicas ${JSON.stringify(replicas)} isr ${JSON.stringify(isr)} (want ${rf} replicas, the leader among them, ISR = replicas)`)
}

function parseArgs(argv) {
  const o = { args: {}, rf: 1 }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const v = argv[i + 1]
    if (a === '--bootstrap') (o.bootstrap = v), i++
    else if (a === '--scenario') (o.scenario = v), i++
    else if (a === '--topic') (o.topic = v), i++
    else if (a === '--replication-factor') (o.rf = Number(v)), i++
    else if (a === '--arg') {
      i++
      if (v && v.includes('=')) o.args[v.slice(0, v.indexOf('='))] = v.slice(v.indexOf('=') + 1)
    }
  }
  return o
}

const sleep = ms => new Promise(r => setTimeout(r, ms))
const errText = e => {
  if (!e) return String(e)
  let s = `${e.name || 'Error'}: ${e.message}`
  if (e.type) s += ` [${e.type}]`
  if (e.cause && e.cause !== e) s += ` (caused by ${errText(e.cause)})`
  return s
}
// The Kafka error name a kafkajs error carries (KafkaJSProtocolError.type), searching causes.
const errType = e => {
  for (let x = e; x; x = x.cause || x.originalError) {
    if (x.type) return x.type
  }
  return e ? e.name : null
}

let lastClientError = null
const logCreator = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  const line = `${new Date().toISOString()} ${logLevel[level] || level} [${namespace}] ${message} ${JSON.stringify(extra)}`
  if (level <= logLevel.ERROR) lastClientError = `${namespace}: ${message}${extra.error ? ' (' + extra.error + ')' : ''}`
  process.stderr.write(line + '\n')
}

class Runner {
  constructor(o) {
    this.topic = o.topic
    this.args = o.args
    this.rf = o.rf
    this.data = {}
    this.deadline = Date.now() + BUDGET_MS
    this.kafka = new Kafka({
      clientId: 'compat-kafkajs',
      brokers: o.bootstrap.split(','),
      logLevel: logLevel.WARN,
      logCreator,
      connectionTimeout: 5000,
      requestTimeout: 15000,
      retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 2000 },
      ...auth.securityOptions(o.args),
    })
    this.closers = []
  }

  remaining(cap) {
    return Math.max(0, Math.min(cap, this.deadline - Date.now()))
  }

  async admin() {
    const a = this.kafka.admin()
    await a.connect()
    this.closers.push(() => a.disconnect())
    return a
  }

  async producer(opts = {}) {
    const p = this.kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, ...opts })
    await p.connect()
    this.closers.push(() => p.disconnect())
    return p
  }

  async close() {
    for (const c of this.closers.reverse()) {
      try {
        await Promise.race([c(), sleep(3000)])
      } catch (e) {
        /* closing is best effort */
      }
    }
  }

  async ensureTopic(admin, topic, partitions) {
    await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: this.rf }],
      waitForLeaders: true,
      timeout: 15000,
    })
    return this.waitPartitions(admin, topic, partitions)
  }

  // Waits until fetchTopicMetadata shows `partitions` partitions, each led by a broker describeCluster lists
  // that answers ListOffsets (fetchTopicOffsets) for it.
  async waitPartitions(admin, topic, partitions) {
    return this.waitReady(topic, partitions, async () => {
      const brokers = (await admin.describeCluster()).brokers.map(b => b.nodeId)
      const t = (await admin.fetchTopicMetadata({ topics: [topic] })).topics.find(x => x.name === topic)
      if (!t) throw fail(`fetchTopicMetadata does not list ${topic}`)
      const leaders = Array(t.partitions.length).fill(-1)
      for (const p of t.partitions) if (p.partitionId < leaders.length) leaders[p.partitionId] = p.leader
      return { brokers, leaders }
    }, () => admin.fetchTopicOffsets(topic))
  }

  // Polls every 200 ms, for up to 20 s of the budget, until the topic is ready: metadata() shows exactly n
  // partitions, each led by a broker the same answer lists, and then served() resolves, a ListOffsets of every
  // partition that its leader answers only once it holds the partition (Kafka publishes Metadata before its
  // replica manager has created the partitions). metadata() resolves to {brokers: [id] (null when the call
  // does not list them), leaders: [leader of partition 0, 1, ...] (-1: none)}; a rejection of either means not yet.
  async waitReady(topic, n, metadata, served) {
    const until = Date.now() + this.remaining(20000)
    let last = 'no answer'
    for (;;) {
      try {
        const { brokers, leaders } = await metadata()
        last = notReady(brokers, leaders, n)
        if (!last) {
          await served()
          return n
        }
      } catch (e) {
        last = errText(e)
      }
      if (Date.now() >= until) throw fail(`topic ${topic} never had ${n} partitions with a leader serving them: ${last}`)
      await sleep(200)
    }
  }

  // Consumes TOPIC in consumer group `groupId` from the beginning until `want` messages or the time cap.
  // kafkajs can only consume through a consumer group (it has no assign()).
  async consume({ groupId, want, capMs = 30000, readUncommitted = false, lingerMs = 0, onMessage }) {
    const consumer = this.kafka.consumer({
      groupId: groupId || groupName(this.topic),
      readUncommitted,
      sessionTimeout: 10000,
      rebalanceTimeout: 10000,
      heartbeatInterval: 1000,
      maxWaitTimeInMs: 500,
      retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
    })
    const got = []
    let crashed = null
    consumer.on(consumer.events.CRASH, ev => {
      crashed = ev.payload.error
    })
    this.closers.push(() => consumer.disconnect())
    await consumer.connect()
    await consumer.subscribe({ topics: [this.topic], fromBeginning: true })
    let resolveDone
    const done = new Promise(r => (resolveDone = r))
    await consumer.run({
      autoCommit: !onMessage,
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, ...message })
        if (onMessage) await onMessage(consumer, partition, message, got.length)
        if (got.length >= want) resolveDone()
      },
    })
    const until = Date.now() + this.remaining(capMs)
    while (got.length < want && !crashed && Date.now() < until) {
      await Promise.race([done, sleep(200)])
    }
    if (lingerMs > 0 && !crashed) await sleep(Math.min(lingerMs, this.remaining(lingerMs)))
    return { consumer, got, crashed }
  }

  consumeFailure(what, got, want, crashed) {
    const why = crashed ? errText(crashed) : lastClientError ? `last client error: ${lastClientError}` : 'timed out'
    return fail(`${what}: consumed ${got.length} of ${want} records (${why})`)
  }

  // ---------------------------------------------------------------- scenarios

  async metadata() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 3)
    const cl = await admin.describeCluster()
    this.data.brokers = cl.brokers.map(b => ({ id: b.nodeId, host: b.host, port: b.port }))
    if (!cl.brokers.length) throw fail('no brokers in metadata')
    for (const b of cl.brokers) if (!b.host || !(b.port > 0)) throw fail(`broker without host/port: ${JSON.stringify(b)}`)
    const topics = await admin.listTopics()
    this.data.topic_listed = topics.includes(this.topic)
    if (!this.data.topic_listed) throw fail(`topic ${this.topic} not listed; topics: ${topics}`)
    return `${cl.brokers.length} broker(s), topic listed`
  }

  async create_topic() {
    const admin = await this.admin()
    const created = await admin.createTopics({
      topics: [{ topic: this.topic, numPartitions: 3, replicationFactor: this.rf }],
      waitForLeaders: true,
      timeout: 15000,
    })
    if (!created) throw fail('createTopics returned false (topic already existed)')
    const n = await this.waitPartitions(admin, this.topic, 3)
    this.data.partitions = n
    return `created with ${n} partitions`
  }

  async produceConsume(codec) {
    const types = {
      none: CompressionTypes.None,
      gzip: CompressionTypes.GZIP,
      snappy: CompressionTypes.Snappy,
      lz4: CompressionTypes.LZ4,
      zstd: CompressionTypes.ZSTD,
    }
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 3)
    const producer = await this.producer()
    // Keyed records in one send, then the unkeyed ones in another.
    const keyed = PRODUCE_SET.filter(r => r.key !== null)
    const unkeyed = PRODUCE_SET.filter(r => r.key === null)
    await producer.send({ topic: this.topic, acks: -1, compression: types[codec], messages: keyed })
    await producer.send({ topic: this.topic, acks: -1, compression: types[codec], messages: unkeyed })
    const want = PRODUCE_SET.length
    const { got, crashed } = await this.consume({ want })
    this.data.consumed = got.length
    if (got.length !== want) throw this.consumeFailure('consumer', got, want, crashed)
    const keyOf = new Map(PRODUCE_SET.map(r => [r.value, r.key]))
    const indexOf = new Map(PRODUCE_SET.map((r, i) => [r.value, i]))
    const values = new Set()
    const lastOffset = {}
    const lastIndexByKey = {}
    for (const m of got) {
      const v = m.value.toString('utf8')
      const k = m.key === null ? null : m.key.toString('utf8')
      if (values.has(v)) throw fail(`duplicate value ${v}`)
      values.add(v)
      if (!keyOf.has(v)) throw fail(`unexpected value ${v}`)
      if (k !== keyOf.get(v)) throw fail(`record ${v} has key ${k}`)
      if (k !== null) {
        const i = indexOf.get(v)
        if (k in lastIndexByKey && lastIndexByKey[k] >= i) throw fail(`key ${k}: ${v} after ${PRODUCE_SET[lastIndexByKey[k]].value}`)
        lastIndexByKey[k] = i
      }
      const off = BigInt(m.offset)
      if (m.partition in lastOffset && lastOffset[m.partition] >= off) throw fail(`partition ${m.partition}: offset ${off} after ${lastOffset[m.partition]}`)
      lastOffset[m.partition] = off
    }
    if (values.size !== want) throw fail(`${values.size} distinct values, want ${want}`)
    this.data.partitions_used = Object.keys(lastOffset).length
    return `${want} records (${codec}) consumed intact over ${this.data.partitions_used} partition(s)`
  }

  async headers() {
    // kafkajs models headers as an object {key: value | [values]}: duplicates are kept (as arrays) but an
    // interleaved order such as (h1, h2, h1) cannot be expressed on produce nor seen on consume.
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer()
    const messages = []
    const n = DATA.headers.records
    for (let i = 0; i < n; i++) {
      messages.push({ key: `${DATA.headers.key_prefix}${i}`, value: `${DATA.headers.value_prefix}${i}`, partition: 0, headers: headersObject() })
    }
    await producer.send({ topic: this.topic, acks: -1, messages })
    const { got, crashed } = await this.consume({ want: n })
    if (got.length !== n) throw this.consumeFailure('consumer', got, n, crashed)
    const want = headersObject()
    const asList = v => (Array.isArray(v) ? v : [v])
    for (const m of got) {
      const h = m.headers
      const ok = Object.keys(h).length === Object.keys(want).length && Object.entries(want).every(([k, v]) => {
        const g = h[k] === undefined ? [] : asList(h[k])
        return g.length === asList(v).length && asList(v).every((x, i) => Buffer.isBuffer(g[i]) && g[i].equals(x))
      })
      if (!ok) throw fail(`offset ${m.offset}: headers ${JSON.stringify(h)}`)
    }
    return `pass with a weaker check: kafkajs headers are an object, so (h1,h2,h1) order is not expressible; duplicates h1=[a,b] and binary h2=00ff intact in ${n} records`
  }

  async list_offsets() {
    const base = DATA.list_offsets.base_timestamp_ms
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer()
    const messages = []
    for (let i = 0; i < DATA.list_offsets.records; i++) {
      messages.push({ key: `k${i}`, value: `v${i}`, partition: 0, timestamp: String(base + i * DATA.list_offsets.step_ms) })
    }
    await producer.send({ topic: this.topic, acks: -1, messages })
    const offs = await admin.fetchTopicOffsets(this.topic)
    const p0 = offs.find(p => p.partition === 0)
    const earliest = Number(p0.low)
    const latest = Number(p0.high)
    const byTs = Number((await admin.fetchTopicOffsetsByTimestamp(this.topic, base + 5000)).find(p => p.partition === 0).offset)
    // admin.fetchTopicOffsetsByTimestamp replaces the broker's -1 with the high watermark, so the raw
    // ListOffsets answer for a timestamp after the last record is read through the client's cluster layer.
    const afterApi = Number((await admin.fetchTopicOffsetsByTimestamp(this.topic, base + 60000)).find(p => p.partition === 0).offset)
    const sym = Object.getOwnPropertySymbols(this.kafka).find(s => s.description === 'private:Kafka:createCluster')
    const cluster = this.kafka[sym]({ metadataMaxAge: 300000, allowAutoTopicCreation: false, maxInFlightRequests: null, isolationLevel: 1 })
    await cluster.connect()
    this.closers.push(() => cluster.disconnect())
    await cluster.addTargetTopic(this.topic)
    const raw = await cluster.fetchTopicsOffset([{ topic: this.topic, fromTimestamp: base + 60000, partitions: [{ partition: 0 }] }])
    const after = Number(raw[0].partitions.find(p => p.partition === 0).offset)
    Object.assign(this.data, { earliest, latest, by_timestamp: byTs, after_last: after, after_last_admin_api: afterApi })
    if (earliest !== 0 || latest !== 10 || byTs !== 5 || after !== -1)
      throw fail(`earliest=${earliest} latest=${latest} byTimestamp=${byTs} afterLast=${after} (want 0, 10, 5, -1)`)
    return 'earliest 0, latest 10, by timestamp 5, after last -1 (admin API maps it to the high watermark 10)'
  }

  async idempotent_produce() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer({ idempotent: true, maxInFlightRequests: 1 })
    const messages = []
    for (let i = 0; i < 100; i++) messages.push({ key: `k${i}`, value: `v${i}` })
    for (let i = 0; i < 100; i += 20) await producer.send({ topic: this.topic, acks: -1, messages: messages.slice(i, i + 20) })
    const { got, crashed } = await this.consume({ want: 100, lingerMs: 500 })
    const distinct = new Set(got.map(m => m.value.toString())).size
    Object.assign(this.data, { consumed: got.length, distinct })
    if (got.length < 100) throw this.consumeFailure('consumer', got, 100, crashed)
    if (got.length !== 100 || distinct !== 100) throw fail(`consumed ${got.length} records, ${distinct} distinct; want exactly 100`)
    return '100 records exactly once'
  }

  async group_commit_resume() {
    const groupId = this.args.group || groupName(this.topic)
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer()
    const messages = []
    for (let i = 0; i < 20; i++) messages.push({ key: `k${i}`, value: `v${i}`, partition: 0 })
    await producer.send({ topic: this.topic, acks: -1, messages })
    let committed = false
    let commitErr = null
    const first = await this.consume({
      groupId,
      want: 10,
      capMs: 20000,
      onMessage: async (consumer, partition, message, n) => {
        if (n === 10) {
          consumer.pause([{ topic: this.topic }])
          try {
            await consumer.commitOffsets([{ topic: this.topic, partition: 0, offset: '10' }])
            committed = true
          } catch (e) {
            commitErr = e
          }
        }
      },
    })
    if (first.got.length < 10) throw this.consumeFailure('first consumer', first.got, 10, first.crashed)
    const until = Date.now() + this.remaining(5000)
    while (!committed && !commitErr && Date.now() < until) await sleep(100)
    if (!committed) throw fail(`commit failed: ${commitErr ? errText(commitErr) : 'timed out'}`)
    await first.consumer.disconnect()
    const second = await this.consume({ groupId, want: 1, capMs: 20000 })
    if (!second.got.length) throw this.consumeFailure('second consumer', second.got, 1, second.crashed)
    const resumed = Number(second.got[0].offset)
    this.data.resumed_at = resumed
    if (resumed !== 10) throw fail(`second consumer resumed at offset ${resumed}, want 10`)
    return 'committed 10, resumed at 10'
  }

  async transactions() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer({ transactionalId: `compat-kafkajs-${this.topic}`, idempotent: true, maxInFlightRequests: 1 })
    const mk = p => Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: `${p}-${i}`, partition: 0 }))
    const t1 = await producer.transaction()
    await t1.send({ topic: this.topic, acks: -1, messages: mk('committed') })
    await t1.commit()
    const t2 = await producer.transaction()
    await t2.send({ topic: this.topic, acks: -1, messages: mk('aborted') })
    await t2.abort()
    // read_committed (kafkajs' default); wait past the 5 committed records for anything extra.
    const { got, crashed } = await this.consume({ want: 5, lingerMs: 2000, readUncommitted: false })
    const vals = got.map(m => m.value.toString())
    this.data.values = vals
    if (got.length < 5) throw this.consumeFailure('read_committed consumer', got, 5, crashed)
    const want = mk('committed').map(m => m.value)
    if (vals.join(',') !== want.join(',')) throw fail(`read_committed saw ${JSON.stringify(vals)}, want ${JSON.stringify(want)}`)
    return 'read_committed saw exactly the 5 committed records'
  }

  async describe_list_groups() {
    const groupId = this.args.group || groupName(this.topic)
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer()
    await producer.send({ topic: this.topic, acks: -1, messages: Array.from({ length: 5 }, (_, i) => ({ value: `v${i}`, partition: 0 })) })
    const { got, crashed } = await this.consume({ groupId, want: 5, capMs: 20000 })
    if (got.length < 5) throw this.consumeFailure('group consumer', got, 5, crashed)
    // The consumer is still running (a member) while we list and describe.
    const { groups } = await admin.listGroups()
    this.data.groups = groups.map(g => g.groupId)
    if (!this.data.groups.includes(groupId)) throw fail(`list groups lacks ${groupId}: ${JSON.stringify(this.data.groups)}`)
    const d = (await admin.describeGroups([groupId])).groups.find(g => g.groupId === groupId)
    this.data.state = d.state
    this.data.members = d.members.length
    if (!d.members.length) throw fail(`describe shows state ${d.state} with no members`)
    return `listed; state ${d.state}, ${d.members.length} member(s)`
  }

  async describe_configs() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const res = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: this.topic }] })
    const entries = res.resources[0].configEntries
    const found = {}
    for (const e of entries) if (['cleanup.policy', 'retention.ms', 'max.message.bytes'].includes(e.configName)) found[e.configName] = e.configValue
    this.data.configs = found
    this.data.count = entries.length
    if (!('cleanup.policy' in found) && !('retention.ms' in found)) throw fail(`neither cleanup.policy nor retention.ms in ${entries.length} configs (error code ${res.resources[0].errorCode})`)
    return `${entries.length} configs, ${JSON.stringify(found)}`
  }

  async create_partitions() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    await admin.createPartitions({ topicPartitions: [{ topic: this.topic, count: 3 }], timeout: 15000 })
    this.data.partitions = await this.waitPartitions(admin, this.topic, 3)
    return `1 -> ${this.data.partitions} partitions`
  }

  async delete_topic() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    await admin.deleteTopics({ topics: [this.topic], timeout: 15000 })
    const until = Date.now() + this.remaining(30000)
    while (Date.now() < until) {
      if (!(await admin.listTopics()).includes(this.topic)) return 'deleted and gone from metadata'
      await sleep(250)
    }
    throw fail('topic still listed 30 s after delete')
  }

  async max_message_size() {
    // kafkajs has no client-side request size limit, so the 1,100,000-byte record reaches the broker as is.
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer({ retry: { retries: 0 } })
    try {
      const md = await producer.send({ topic: this.topic, acks: -1, messages: [{ value: Buffer.alloc(1000000), partition: 0 }] })
      this.data.small_offset = Number(md[0].baseOffset)
    } catch (e) {
      this.data.small_error = errType(e)
      throw fail(`record with a 1,000,000-byte value rejected: ${errText(e)}`)
    }
    try {
      const md = await producer.send({ topic: this.topic, acks: -1, messages: [{ value: Buffer.alloc(1100000), partition: 0 }] })
      this.data.error = null
      throw fail(`record with a 1,100,000-byte value accepted at offset ${md[0].baseOffset}`)
    } catch (e) {
      if (e instanceof Outcome) throw e
      this.data.error = errType(e)
      this.data.exception = errText(e)
      return `under the limit accepted; over it rejected with ${this.data.error}`
    }
  }

  // ---------------------------------------------------------------- admin scenarios (2nd batch)

  async alter_configs() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    // kafkajs has only the legacy AlterConfigs (it replaces the resource's whole dynamic config set).
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: this.topic, configEntries: [{ name: 'retention.ms', value: ALTER_RETENTION_MS }] }] })
    const sources = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG', 'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG', 'DYNAMIC_BROKER_LOGGER_CONFIG']
    // Kafka applies the alter through its metadata log: poll the describe for up to 10 s.
    const until = Date.now() + this.remaining(10000)
    let value, source
    for (;;) {
      const res = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: this.topic, configNames: ['retention.ms'] }] })
      const e = res.resources[0].configEntries.find(x => x.configName === 'retention.ms')
      if (!e) throw fail(`describeConfigs after the alter has no retention.ms (error code ${res.resources[0].errorCode})`)
      value = e.configValue
      source = typeof e.configSource === 'number' ? sources[e.configSource] || `source ${e.configSource}` : String(e.configSource)
      if ((value === ALTER_RETENTION_MS && source === DYNAMIC_TOPIC_CONFIG) || Date.now() > until) break
      await sleep(200)
    }
    this.data.value = value
    this.data.source = source
    if (value !== ALTER_RETENTION_MS || source !== DYNAMIC_TOPIC_CONFIG) {
      throw fail(`after alterConfigs retention.ms=${ALTER_RETENTION_MS} describeConfigs shows ${value} (source ${source}), want ${ALTER_RETENTION_MS} (${DYNAMIC_TOPIC_CONFIG})`)
    }
    return `alterConfigs (legacy; kafkajs has no incremental) retention.ms=${ALTER_RETENTION_MS}; describeConfigs: ${value}, source ${source}`
  }

  async describe_topic() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 3)
    const md = await admin.fetchTopicMetadata({ topics: [this.topic] })
    const t = md.topics.find(x => x.name === this.topic)
    if (!t) throw fail('fetchTopicMetadata does not list the topic')
    const parts = []
    for (const p of [...t.partitions].sort((a, b) => a.partitionId - b.partitionId)) {
      checkReplicas(p.partitionId, p.leader, p.replicas, p.isr, this.rf)
      parts.push(`p${p.partitionId} leader/replicas/isr ${p.leader}`)
    }
    this.data.partitions = parts.length
    if (parts.length !== 3) throw fail(`${parts.length} partitions, want 3`)
    return `fetchTopicMetadata: ${parts.join(', ')}`
  }

  async delete_records() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer()
    const { produce, before } = DATA.delete_records
    await producer.send({ topic: this.topic, acks: -1, messages: Array.from({ length: produce }, (_, i) => ({ key: `k${i}`, value: `r${i}`, partition: 0 })) })
    await admin.deleteTopicRecords({ topic: this.topic, partitions: [{ partition: 0, offset: String(before) }] })
    const offs = await admin.fetchTopicOffsets(this.topic)
    const p0 = offs.find(o => o.partition === 0)
    this.data.low = p0 && p0.low
    if (!p0 || p0.low !== String(before)) throw fail(`deleteTopicRecords before ${before}: fetchTopicOffsets low ${p0 && p0.low}, want ${before}`)
    return `deleteTopicRecords before ${before}; fetchTopicOffsets low (earliest) ${before}`
  }

  async cross_produce() {
    const admin = await this.admin()
    await this.ensureTopic(admin, this.topic, 1)
    const producer = await this.producer({ idempotent: true, maxInFlightRequests: 1 })
    const messages = []
    for (const r of CROSS) messages.push({ key: r.key, value: r.value, partition: 0, headers: { [CROSS_HEADER]: CLIENT } })
    await producer.send({ topic: this.topic, acks: -1, compression: CompressionTypes.None, messages })
    this.data.produced = CROSS.length
    return `${CROSS.length} CROSS records produced`
  }

  async cross_consume() {
    const from = this.args.expect_from
    const { got, crashed } = await this.consume({ groupId: `${this.topic}-${CLIENT}-cross`, want: CROSS.length })
    got.sort((a, b) => Number(a.offset) - Number(b.offset))
    this.data.records = got.map(m => ({
      offset: Number(m.offset),
      key: m.key === null ? null : m.key.toString('utf8'),
      value: m.value === null ? null : m.value.toString('utf8'),
      headers: Object.entries(m.headers || {}).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map(x => [k, x.toString('utf8')])),
    }))
    if (got.length !== CROSS.length) throw this.consumeFailure('consumer', got, CROSS.length, crashed)
    this.data.records.forEach((r, i) => {
      const ok = r.offset === i && r.key === CROSS[i].key && r.value === CROSS[i].value && r.headers.length === 1 && r.headers[0][0] === CROSS_HEADER && (!from || r.headers[0][1] === from)
      if (!ok) throw fail(`record ${i} differs from the CROSS set: ${JSON.stringify(r)}`)
    })
    return `${CROSS.length} CROSS records read${from ? ' from ' + from : ''}`
  }
}

// ASCII-only JSON so the result line survives any locale.
const asciiJson = o => JSON.stringify(o).replace(/[\u007f-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))

async function main() {
  const o = parseArgs(process.argv.slice(2))
  const out = { result: 'fail', detail: '', data: {} }
  if (!o.bootstrap || !o.scenario || !o.topic) {
    out.detail = 'usage: --bootstrap HOST:PORT --scenario NAME --topic TOPIC [--replication-factor N] [--arg K=V ...]'
  } else {
    const r = new Runner(o)
    out.data = r.data
    const scenarios = {
      metadata: () => r.metadata(),
      create_topic: () => r.create_topic(),
      produce_consume_none: () => r.produceConsume('none'),
      produce_consume_gzip: () => r.produceConsume('gzip'),
      produce_consume_snappy: () => r.produceConsume('snappy'),
      produce_consume_lz4: () => r.produceConsume('lz4'),
      produce_consume_zstd: () => r.produceConsume('zstd'),
      headers: () => r.headers(),
      list_offsets: () => r.list_offsets(),
      idempotent_produce: () => r.idempotent_produce(),
      group_commit_resume: () => r.group_commit_resume(),
      transactions: () => r.transactions(),
      describe_list_groups: () => r.describe_list_groups(),
      describe_configs: () => r.describe_configs(),
      create_partitions: () => r.create_partitions(),
      delete_topic: () => r.delete_topic(),
      max_message_size: () => r.max_message_size(),
      alter_configs: () => r.alter_configs(),
      describe_topic: () => r.describe_topic(),
      log_dirs: () => { throw new Outcome('skip', 'kafkajs admin has no DescribeLogDirs') },
      delete_records: () => r.delete_records(),
      consumer_groups_cli: () => { throw new Outcome('skip', "kafka-cli only: checks the kafka-consumer-groups tool's output") },
      group_consumer_protocol: () => { throw new Outcome('skip', 'kafkajs implements only the classic group protocol (no ConsumerGroupHeartbeat / KIP-848)') },
      cross_produce: () => r.cross_produce(),
      cross_consume: () => r.cross_consume(),
      auth_plain: () => auth.authenticated(r, DATA, fail, errText),
      auth_scram_sha_256: () => auth.authenticated(r, DATA, fail, errText),
      auth_scram_sha_512: () => auth.authenticated(r, DATA, fail, errText),
      auth_mtls: () => auth.authenticated(r, DATA, fail, errText),
      auth_bad_password: () => auth.refused(r, o.scenario, DATA, fail, errText),
      auth_no_tls: () => auth.refused(r, o.scenario, DATA, fail, errText),
      acl_allowed: () => auth.authenticated(r, DATA, fail, errText),
      acl_denied: () => auth.denied(r, DATA, fail, errText),
      acl_deny_wins: () => auth.denied(r, DATA, fail, errText),
      acl_group_denied: () => auth.groupDenied(r, DATA, fail, errText),
    }
    try {
      if (!scenarios[o.scenario]) throw new Outcome('skip', `unknown scenario ${o.scenario}`)
      out.detail = await scenarios[o.scenario]()
      out.result = 'pass'
    } catch (e) {
      if (e instanceof Outcome) {
        out.result = e.result
        out.detail = e.message
      } else {
        out.result = 'fail'
        out.detail = errText(e)
      }
    }
    await Promise.race([r.close(), sleep(5000)])
  }
  process.stdout.write('\n' + asciiJson(out) + '\n', () => process.exit(0))
}

process.on('unhandledRejection', e => process.stderr.write(`unhandled rejection: ${errText(e)}\n`))
main().catch(e => {
  process.stdout.write('\n' + asciiJson({ result: 'fail', detail: `runner crashed: ${errText(e)}`, data: {} }) + '\n', () => process.exit(0))
})
