'use strict'
// The secure columns for kafkajs: the security arguments (clients/RUNNERS.md) as kafkajs's ssl and sasl options,
// and the auth_* scenarios.

const fs = require('fs')

// Kafka constructor options from --arg security.protocol, sasl.*, ssl.*.location.
function securityOptions(args) {
  const protocol = (args['security.protocol'] || 'PLAINTEXT').toUpperCase()
  const o = {}
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    o.ssl = {}
    if (args['ssl.ca.location']) o.ssl.ca = [fs.readFileSync(args['ssl.ca.location'], 'utf8')]
    if (args['ssl.certificate.location']) o.ssl.cert = fs.readFileSync(args['ssl.certificate.location'], 'utf8')
    if (args['ssl.key.location']) o.ssl.key = fs.readFileSync(args['ssl.key.location'], 'utf8')
  }
  if (protocol.startsWith('SASL_')) {
    o.sasl = { mechanism: (args['sasl.mechanism'] || '').toLowerCase(), username: args['sasl.username'], password: args['sasl.password'] }
  }
  return o
}

function how(args) {
  const protocol = args['security.protocol'] || 'PLAINTEXT'
  if (protocol.startsWith('SASL_')) return `${args['sasl.mechanism']} over ${protocol} as ${args['sasl.username']}`
  return args['ssl.certificate.location'] ? `${protocol} with a client certificate` : protocol
}

// auth_plain, auth_scram_sha_256/512, auth_mtls, acl_allowed: produce the auth records, consume them back.
async function authenticated(r, DATA, fail, errText) {
  const a = DATA.auth
  const want = []
  for (let i = 0; i < a.records; i++) want.push({ key: `${a.key_prefix}${i}`, value: `${a.value_prefix}${i}` })
  try {
    const producer = await r.producer()
    await producer.send({ topic: r.topic, acks: -1, messages: want.map(m => ({ ...m, partition: 0 })) })
  } catch (e) {
    throw fail(`${how(r.args)}: produce: ${errText(e)}`)
  }
  const { got, crashed } = await r.consume({ want: want.length, capMs: 20000 })
  if (crashed) throw fail(`${how(r.args)}: consume: ${errText(crashed)}`)
  const seen = got.map(m => `${m.key}=${m.value}`).join(',')
  const exp = want.map(m => `${m.key}=${m.value}`).join(',')
  if (seen !== exp) throw fail(`${how(r.args)}: consumed ${seen}, want ${exp}`)
  return `${how(r.args)}: produced and consumed ${got.length} records`
}

// auth_bad_password, auth_no_tls: connecting a producer must fail within the refusal bound.
async function refused(r, scenario, DATA, fail, errText) {
  let timer
  const bound = new Promise(resolve => (timer = setTimeout(() => resolve('hung'), DATA.auth.refusal_bound_s * 1000)))
  const attempt = r.producer().then(() => 'served', e => e)
  const res = await Promise.race([attempt, bound])
  clearTimeout(timer)
  if (res === 'served') throw fail('the client was served')
  const err = res === 'hung' ? `hung: no error within ${DATA.auth.refusal_bound_s}s` : errText(res)
  r.data.error = err
  if (res === 'hung') throw fail(err)
  if (scenario === 'auth_bad_password' && !err.toLowerCase().includes('authentication')) throw fail(`failed, but not with an authentication error: ${err}`)
  return `refused: ${err}`
}

// acl_denied, acl_deny_wins: producing the auth records as a user without ACLs (denied a literal ACL) must fail with an authorization error within the
// refusal bound.
async function denied(r, DATA, fail, errText) {
  const a = DATA.auth
  let timer
  const bound = new Promise(resolve => (timer = setTimeout(() => resolve('hung'), a.refusal_bound_s * 1000)))
  const messages = []
  for (let i = 0; i < a.records; i++) messages.push({ key: `${a.key_prefix}${i}`, value: `${a.value_prefix}${i}`, partition: 0 })
  const attempt = r.producer({ retry: { retries: 0 } })
    .then(p => p.send({ topic: r.topic, acks: -1, messages }))
    .then(() => 'served', e => e)
  const res = await Promise.race([attempt, bound])
  clearTimeout(timer)
  if (res === 'served') throw fail('the client was served')
  const err = res === 'hung' ? `hung: no error within ${a.refusal_bound_s}s` : errText(res)
  r.data.error = err
  if (res === 'hung') throw fail(err)
  if (!err.toLowerCase().includes('authoriz')) throw fail(`failed, but not with an authorization error: ${err}`)
  return `denied: ${err}`
}

// acl_group_denied: consuming in the scenario's group as a user who may read the topic but not the group must crash
// the consumer with a group authorization error within the refusal bound (the topic's name, which holds "group",
// taken out before looking).
async function groupDenied(r, DATA, fail, errText) {
  const bound = DATA.auth.refusal_bound_s
  let err
  try {
    const { got, crashed } = await r.consume({ want: DATA.auth.records, capMs: bound * 1000 })
    err = crashed ? errText(crashed) : got.length ? null : `hung: no error within ${bound}s`
  } catch (e) {
    err = errText(e)
  }
  if (err === null) throw fail('the client was served')
  r.data.error = err
  if (err.startsWith('hung')) throw fail(err)
  const low = err.split(r.topic).join('TOPIC').toLowerCase()
  if (!low.includes('authoriz') || !low.includes('group')) throw fail(`failed, but not with a group authorization error: ${err}`)
  return `denied: ${err}`
}

module.exports = { securityOptions, authenticated, refused, denied, groupDenied }
