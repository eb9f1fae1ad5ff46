// ltijs-tool.js: ltijs (https://github.com/Cvmcosta/ltijs), unchanged, as an LTI 1.3 tool
// that ltiop launches in platform mode. It registers itself by LTI Dynamic Registration
// (ltijs's own /register), validates the launch with ltijs's own checks (state cookie,
// signature against ltiop's key set, nonce, max age, claims), then uses ltijs's own service
// clients against the URLs of the launch: NRPS (every page, following Link: rel="next"),
// AGS line items (list, create, get, update, delete), scores and results. The launch answers a
// JSON report of each step, which the Go test (test/e2e/ltijs_test.go) checks. A
// deep-linking launch answers ltijs's own LtiDeepLinkingResponse form.
//
// Environment: LTIJS_PORT, LTIJS_URL (its public base URL), LTIJS_KEY (ltijs's
// encryption key), PGHOST, PGPORT, PGDATABASE, PGUSER (ltijs-sequelize on PostgreSQL).
'use strict'

const lti = require('ltijs').Provider
const Database = require('ltijs-sequelize')

const port = Number(process.env.LTIJS_PORT || 3010)
const base = process.env.LTIJS_URL || `http://127.0.0.1:${port}`

const db = new Database(process.env.PGDATABASE || 'ltijs', process.env.PGUSER || 'postgres', process.env.PGPASSWORD || '', {
  host: process.env.PGHOST || '127.0.0.1',
  port: Number(process.env.PGPORT || 5432),
  dialect: 'postgres',
  logging: false
})

lti.setup(process.env.LTIJS_KEY || 'ltijs-realtools-encryption-key', { plugin: db }, {
  // Production settings: state and session cookies required (no devMode), tokens at most 10 s old.
  cookies: { secure: false, sameSite: 'Lax' },
  dynReg: { url: base, name: 'ltijs (ltiop realtools)', description: 'ltijs run against ltiop', autoActivate: true }
})

// step runs one service call and records what it did: the report is the proof.
async function step (report, name, fn) {
  try {
    const value = await fn()
    report.steps.push({ step: name, ok: true, value })
    return value
  } catch (err) {
    const res = err.response
    report.steps.push({
      step: name,
      ok: false,
      error: err.message,
      status: res && res.statusCode,
      body: res && typeof res.body === 'string' ? res.body.slice(0, 2000) : undefined
    })
    return undefined
  }
}

lti.onConnect(async (token, req, res) => {
  const ctx = token.platformContext
  const report = {
    user: token.user,
    iss: token.iss,
    clientId: token.clientId,
    deploymentId: token.deploymentId,
    context: ctx.context && ctx.context.id,
    resourceLink: ctx.resource && ctx.resource.id,
    roles: ctx.roles,
    steps: []
  }
  // NRPS: two members a page, every page (ltijs follows the Link header), then the learners.
  await step(report, 'nrps.members', async () => {
    const r = await lti.NamesAndRoles.getMembers(token, { limit: 2, pages: false })
    return { context: r.context, members: r.members.map(m => ({ user_id: m.user_id, roles: m.roles, status: m.status, name: m.name })) }
  })
  await step(report, 'nrps.learners', async () => {
    const r = await lti.NamesAndRoles.getMembers(token, { role: 'Learner' })
    return r.members.map(m => m.user_id)
  })
  // AGS: the launch's line item, a new one of the tool's own, a score in each, the results.
  const launchItem = ctx.endpoint && ctx.endpoint.lineitem
  await step(report, 'ags.lineitems', async () => (await lti.Grade.getLineItems(token)).lineItems)
  const created = await step(report, 'ags.createLineItem', () => lti.Grade.createLineItem(token,
    { scoreMaximum: 50, label: 'ltijs essay', tag: 'essay', resourceId: 'ltijs-essay' }, { resourceLinkId: true }))
  if (created) {
    await step(report, 'ags.getLineItem', () => lti.Grade.getLineItemById(token, created.id))
    await step(report, 'ags.updateLineItem', () => lti.Grade.updateLineItemById(token, created.id,
      { scoreMaximum: 50, label: 'ltijs essay (revised)', tag: 'essay', resourceId: 'ltijs-essay', resourceLinkId: ctx.resource.id }))
    await step(report, 'ags.lineitemsByTag', async () => (await lti.Grade.getLineItems(token, { tag: 'essay' })).lineItems)
    await step(report, 'ags.score', () => lti.Grade.submitScore(token, created.id, {
      userId: token.user, scoreGiven: 42, scoreMaximum: 50, comment: 'Scored by ltijs',
      activityProgress: 'Completed', gradingProgress: 'FullyGraded'
    }))
    await step(report, 'ags.results', async () => (await lti.Grade.getScores(token, created.id, { userId: token.user })).scores)
  }
  const scratch = await step(report, 'ags.createScratch', () => lti.Grade.createLineItem(token, { scoreMaximum: 1, label: 'ltijs scratch' }))
  if (scratch) await step(report, 'ags.deleteLineItem', () => lti.Grade.deleteLineItemById(token, scratch.id))
  if (launchItem) {
    // Without scoreMaximum ltijs reads the line item first (GET with the lineitem scope).
    await step(report, 'ags.scoreLaunchItem', () => lti.Grade.submitScore(token, launchItem, {
      scoreGiven: 7, activityProgress: 'Completed', gradingProgress: 'FullyGraded'
    }))
  }
  return res.send(report)
})

// Deep linking: ltijs's own signed LtiDeepLinkingResponse, posted back to ltiop's return URL.
lti.onDeepLinking(async (token, req, res) => {
  const items = [
    { type: 'ltiResourceLink', title: 'ltijs quiz 2', url: base + '/', custom: { quiz: '2' } },
    { type: 'link', title: 'ltijs documentation', url: 'https://cvmcosta.github.io/ltijs/' }
  ]
  return res.send(await lti.DeepLinking.createDeepLinkingForm(token, items, { message: 'Added by ltijs' }))
})

lti.deploy({ port, silent: true }).then(() => {
  console.log(`ltijs listening on ${base}`)
})
