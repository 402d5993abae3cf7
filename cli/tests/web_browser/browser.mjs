// Drives Debian's chromium through `docket web` (started and seeded by
// cli/tests/web_browser.rs, which checks the database afterwards).
//
// usage: node browser.mjs BASE_URL TOKEN SCREENSHOT_DIR
// Exits non-zero, naming the step, on the first failure.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const [base, token, shots] = process.argv.slice(2);
if (!base || !token || !shots) {
  console.error('usage: node browser.mjs BASE_URL TOKEN SCREENSHOT_DIR');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`  ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // Playwright gives every launch a fresh temporary profile (its --user-data-dir).
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});

// What the browser logs as an error: a Content-Security-Policy violation (a blocked
// stylesheet, image or form target) shows up here and nowhere else.
const consoleErrors = [];

async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1320, height: 900 } });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error') consoleErrors.push(`${page.url()}: ${msg.text()}`);
  });
  return page;
}

async function text(page) {
  return page.locator('body').innerText();
}

async function signIn(page, next) {
  await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
  await page.fill('input[name=token]', token);
  await Promise.all([page.waitForURL(`${base}${next}`), page.click('button:has-text("Sign in")')]);
}

/** Clicks a submit button and waits for the page it leads to. */
async function submit(page, selector) {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

try {
  // ---- operator, not signed in: read-only pages ----
  const op = await newPage();
  await op.goto(`${base}/`);
  let body = await text(op);
  check((await op.title()).startsWith('Scheduler'), 'overview title');
  for (const task of ['send-email', 'nightly-report', 'billing-sync', 'cache-warmup']) {
    check(body.includes(task), `overview lists ${task}`);
  }
  check(await op.locator('svg.chart rect').count() === 4, 'backlog chart: 4 levels (90, 50, 10, no priority)');
  check(body.includes('worker-node-3'), 'dead execution with its owner');
  check(body.includes('Sign in with the token'), 'actions need sign-in');
  await op.screenshot({ path: join(shots, 'operator.png'), fullPage: true });

  await op.goto(`${base}/executions/send-email/later`);
  check(await op.locator('button:has-text("Run now")').count() === 0, 'no action buttons before sign-in');

  // Wrong token: a 401 page.
  await op.goto(`${base}/login`);
  await op.fill('input[name=token]', 'not-the-token');
  const bad = await Promise.all([op.waitForNavigation(), op.click('button:has-text("Sign in")')]);
  check(bad[0].status() === 401 && (await text(op)).includes('wrong token'), 'wrong token: 401 page');

  // ---- operator actions ----
  await signIn(op, '/executions/send-email/later');
  await submit(op, 'button:has-text("Run now")');
  body = await text(op);
  check(body.includes('Done: run now.') && op.url().includes('done='), 'run now done');
  check(await op.locator('.title .badge').innerText() === 'due', 'now due');

  await op.goto(`${base}/executions/send-email/low`);
  await op.fill('input[name=at]', '2030-01-02T03:04:05');
  await submit(op, 'button:has-text("Reschedule")');
  check((await text(op)).includes('2030-01-02 03:04:05'), 'rescheduled to 2030-01-02 03:04:05');

  await op.goto(`${base}/executions/send-email/obsolete`);
  await submit(op, 'button:has-text("Cancel execution")');
  check(op.url().startsWith(`${base}/tasks/send-email?done=cancelled`), 'cancel leads to the task page');
  const gone = await op.goto(`${base}/executions/send-email/obsolete`);
  check(gone.status() === 404, 'cancelled execution is gone (404)');

  // A stale page: the row changes (through the API) after the page was rendered.
  await op.goto(`${base}/executions/send-email/high`);
  const version = Number(await op.locator('form[action$="/run-now"] input[name=version]').inputValue());
  const api = await op.request.post(`${base}/api/executions/send-email/high/run-now`, {
    headers: { Authorization: `Bearer ${token}` },
    data: { version },
  });
  check(api.status() === 200, 'API run-now with the bearer token');
  const stale = await Promise.all([op.waitForNavigation(), op.click('button:has-text("Run now")')]);
  check(stale[0].status() === 409 && (await text(op)).includes('nothing was changed'), 'stale page: 409');

  // Search by task and instance.
  await op.goto(`${base}/tasks/send-email`);
  await op.fill('form.inline input[name=instance]', 'high');
  await submit(op, 'form.inline button');
  check((await text(op)).includes('1 found'), 'search finds send-email/high');

  // ---- pause and resume tasks cluster-wide from their pages ----
  await op.goto(`${base}/tasks/cache-warmup`);
  check((await text(op)).includes('Running normally'), 'cache-warmup runs normally');
  await submit(op, 'button:has-text("Pause task")');
  body = await text(op);
  check(body.includes('Done: paused.') && body.includes('Resume task'), 'cache-warmup paused from its page');
  check(await op.locator('.title .badge.paused').count() === 1, 'task page: paused badge');
  await op.goto(`${base}/tasks/billing-sync`);
  await submit(op, 'button:has-text("Pause task")');
  await submit(op, 'button:has-text("Resume task")');
  check((await text(op)).includes('Done: resumed.'), 'billing-sync paused and resumed from its page');
  await op.goto(`${base}/`);
  check(await op.locator('#lag .badge.paused').count() === 1, 'overview lag table: one paused task');
  check(/oldest due/i.test(await op.locator('#lag').innerText()), 'overview: lag table');
  const metrics = await (await op.request.get(`${base}/metrics`)).text();
  check(metrics.includes('docket_task_paused{task="cache-warmup"} 1'), '/metrics: cache-warmup paused');
  check(!metrics.includes('docket_task_paused{task="billing-sync"}'), '/metrics: billing-sync resumed');
  check(/docket_oldest_due_age_seconds\{task="cache-warmup"\} [1-9]/.test(metrics), '/metrics: the paused task\'s due executions age');
  // ---- bulk retry of a task's failing executions, confirmed first ----
  await op.goto(`${base}/tasks/billing-sync`);
  await Promise.all([op.waitForNavigation(), op.click('a.button:has-text("retry")')]);
  check((await text(op)).includes('Confirm: retry 4 executions'), 'bulk retry: the confirmation lists the 4 failing executions');
  await submit(op, 'button:has-text("Confirm: retry")');
  check((await text(op)).includes('Done: 4 retried.'), 'bulk retry: 4 retried');

  await op.goto(`${base}/executions/cache-warmup/region-1`);
  check((await op.locator('#next').innerText()).includes('Due since'), 'execution page: what happens next');

  // ---- two workers through the worker page ----
  const alice = await newPage();
  const bob = await newPage();
  await signIn(alice, '/queue/label/workers/alice');
  await signIn(bob, '/queue/label/workers/bob');

  async function take(page, expect) {
    await submit(page, 'button:has-text("Take next item")');
    const held = await page.locator('article.held').evaluateAll((els) => els.map((e) => e.dataset.item));
    check(held.length === 1 && held[0] === expect, `${page === alice ? 'alice' : 'bob'} takes ${expect}`);
  }
  async function submitItem(page, item) {
    await submit(page, `article.held[data-item="${item}"] button:has-text("Submit")`);
    check((await text(page)).includes('Done: submitted.'), `${page === alice ? 'alice' : 'bob'} submits ${item}`);
  }

  await take(alice, 'rec1');
  body = await text(alice);
  check(body.includes('"hitOrder":1'), 'record key in hitOrder JSON form');
  check(body.includes('The parcel arrived two days late.'), 'the item\'s attributes');
  await alice.screenshot({ path: join(shots, 'worker.png'), fullPage: true });
  await take(bob, 'rec2');
  await submitItem(alice, 'rec1');
  await take(alice, 'rec3');
  await submitItem(bob, 'rec2');
  await take(bob, 'rec1');
  await submitItem(alice, 'rec3');
  await take(alice, 'rec2');
  await submitItem(bob, 'rec1');
  await take(bob, 'rec3');
  await submitItem(alice, 'rec2');
  await submitItem(bob, 'rec3');
  await submit(alice, 'button:has-text("Take next item")');
  check((await text(alice)).includes('Done: nothing to take.'), 'alice: nothing left to take');

  await op.goto(`${base}/queue/label`);
  body = await text(op);
  check((body.match(/SUBMITTED/g) || []).length === 6, 'queue page: six submissions');
  check(/alice\s+nothing/.test(body) && /bob\s+nothing/.test(body), 'queue page: both workers see nothing left');
  await op.screenshot({ path: join(shots, 'queue.png'), fullPage: true });

  // 401, 404 and 409 pages are expected above (and /favicon.ico is a 404); Chromium logs
  // each as a failed resource.
  const unexpected = consoleErrors.filter((e) => !/status of (401|404|409)/.test(e));
  check(unexpected.length === 0, `no console errors (CSP violations)${unexpected.length ? `: ${unexpected.join('; ')}` : ''}`);

  console.log('browser test: all checks passed');
} catch (e) {
  console.error(`browser test FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
