#!/usr/bin/env node
// SOAP interop scenario with node-soap (npm package `soap`), a JavaScript toolkit: it loads
// ardacat's WSDL from the live server and runs every operation over the SOAP 1.1 port and, with
// SOAP 1.2 envelopes, over the SOAP 1.2 port, including faults (the MetadataFault detail code)
// and paging through a query.
//
//     NODE_PATH=DIR/node_modules node node_scenario.js --url http://127.0.0.1:8823 --user root --password secret
//
// Ends with the line `N passed, M failed`; exits 1 if anything failed.
'use strict';

const soap = require('soap');

let passed = 0;
let failed = 0;

function check(name, cond, detail) {
  if (cond) {
    passed += 1;
  } else {
    failed += 1;
    console.log(`FAIL ${name}: ${detail === undefined ? '' : detail}`);
  }
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const show = (x) => JSON.stringify(x);

// A repeated element as a list: node-soap leaves an absent one out.
function arr(x) {
  if (x === undefined || x === null) return [];
  return Array.isArray(x) ? x : [x];
}

// The text of an element that may be nil (`xsi:nil`): node-soap gives no `value` then.
const text = (a) => (a.value === undefined || a.value === null ? null : String(a.value));

function faultCode(err) {
  const detail = err && err.root && err.root.Envelope && err.root.Envelope.Body && err.root.Envelope.Body.Fault;
  // SOAP 1.1: faultcode/detail; SOAP 1.2: Code/Detail.
  const d = detail && (detail.detail || detail.Detail);
  const mf = d && d.MetadataFault;
  return mf && mf.code !== undefined ? Number(mf.code) : null;
}

async function expectFault(name, code, call) {
  try {
    await call();
  } catch (err) {
    const got = faultCode(err);
    check(name, got === code, `expected MetadataFault code ${code}, got ${got} (${err.message})`);
    return err;
  }
  check(name, false, `expected a fault with code ${code}, the call succeeded`);
  return null;
}

// One operation on one port, as a promise of its result.
function op(port, name, args) {
  return new Promise((resolve, reject) => {
    port[name](args, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

async function step(name, fn) {
  try {
    await fn();
  } catch (err) {
    check(name, false, err && err.stack ? err.stack : String(err));
  }
}

async function scenario(port, tag, version) {
  const base = `/node${tag}`;
  const call = (name, args) => op(port, name, args || {});

  await step(`${tag} basics`, async () => {
    const pong = await call('ping');
    check(`${tag} ping`, pong === null || same(pong, {}), show(pong));
    const v = await call('getVersion');
    check(`${tag} getVersion`, v && String(v.version).includes('ardacat'), show(v));
  });

  await step(`${tag} schema`, async () => {
    await call('createSchema', {
      schemaName: base,
      attribute: [
        { name: 'size', type: 'int' },
        { name: 'label', type: 'varchar(64)' },
        { name: 'w', type: 'float' },
      ],
    });
    let d = await call('describeSchema', { schemaName: base });
    check(`${tag} describeSchema`, same(arr(d && d.attribute).map((a) => [a.name, a.type]), [['size', 'int'], ['label', 'varchar(64)'], ['w', 'float']]), show(d));
    const all = await call('listSchemas');
    check(`${tag} listSchemas`, arr(all && all.schemaName).includes(base), show(all));
    await call('addSchemaAttributes', { schemaName: base, attribute: [{ name: 'extra', type: 'text' }] });
    d = await call('describeSchema', { schemaName: base });
    check(`${tag} addSchemaAttributes`, arr(d && d.attribute).length === 4, show(d));
    await call('removeSchemaAttributes', { schemaName: base, attributeName: ['extra'] });
    d = await call('describeSchema', { schemaName: base });
    check(`${tag} removeSchemaAttributes`, arr(d && d.attribute).length === 3, show(d));
    await call('createSchema', { schemaName: `${base}/sub`, plain: true });
    const sub = await call('listSchemas', { path: base });
    check(`${tag} listSchemas(path)`, same(arr(sub && sub.schemaName), [`${base}/sub`]), show(sub));
    d = await call('describeSchema', { schemaName: `${base}/sub` });
    check(`${tag} plain schema`, arr(d && d.attribute).length === 0, show(d));
    await call('dropSchema', { schemaName: `${base}/sub` });
    const none = await call('listSchemas', { path: base });
    check(`${tag} dropSchema`, arr(none && none.schemaName).length === 0, show(none));
  });

  await step(`${tag} entries`, async () => {
    const batch = [];
    for (let i = 0; i < 50; i += 1) {
      const attrs = [{ name: 'size', value: String(i) }];
      if (i % 2 === 0) attrs.push({ name: 'label', value: `even <${i}> & 'q'` });
      batch.push({ name: `f${String(i).padStart(3, '0')}`, attribute: attrs });
    }
    const created = await call('createEntry', { schemaName: base, entry: batch });
    check(`${tag} createEntry`, created && Number(created.created) === 50, show(created));
    let got = await call('getAttributes', { entryName: [`${base}/f002`, `${base}/f001`], attributeName: ['label', 'size'] });
    check(
      `${tag} getAttributes`,
      same(arr(got && got.entry).map((e) => [e.name, arr(e.attribute).map((a) => [a.name, text(a)])]), [
        [`${base}/f002`, [['label', "even <2> & 'q'"], ['size', '2']]],
        [`${base}/f001`, [['label', null], ['size', '1']]],
      ]),
      show(got),
    );
    const listed = await call('listAttributes', { entryName: `${base}/f001` });
    check(`${tag} listAttributes`, same(arr(listed && listed.attribute).map((a) => a.name), ['size', 'label', 'w']), show(listed));
    let n = await call('setAttributes', { pattern: `${base}/f00*`, condition: 'size < 5', attribute: [{ name: 'label', value: 'say "hi" \\o/' }] });
    check(`${tag} setAttributes(condition)`, Number(n.updated) === 5, show(n));
    got = await call('getAttributes', { entryName: [`${base}/f003`], attributeName: ['label'] });
    check(`${tag} setAttributes value`, text(arr(arr(got.entry)[0].attribute)[0]) === 'say "hi" \\o/', show(got));
    n = await call('setAttributes', { pattern: `${base}/f003`, attribute: [{ name: 'w', value: '0.5' }] });
    check(`${tag} setAttributes`, Number(n.updated) === 1, show(n));
    n = await call('clearAttributes', { pattern: `${base}/f003`, attributeName: ['label', 'w'] });
    check(`${tag} clearAttributes`, Number(n.cleared) === 1, show(n));
    got = await call('getAttributes', { entryName: [`${base}/f003`], attributeName: ['label', 'w'] });
    check(`${tag} cleared`, same(arr(arr(got.entry)[0].attribute).map(text), [null, null]), show(got));
  });

  await step(`${tag} paging`, async () => {
    const rowsOf = (r) => arr(r.row).map((row) => arr(row.value).map(String));
    let r = (await call('query', { select: [`${base}:FILE`, `${base}:size`], condition: `${base}:size >= 0`, orderBy: `${base}:size`, pageSize: 7 })).result;
    check(`${tag} query columns`, same(arr(r.column), [`${base}:FILE`, `${base}:size`]), show(r.column));
    const rows = rowsOf(r);
    let pages = 1;
    while (r.more === true || r.more === 'true') {
      r = (await call('nextQuery', { token: r.token, pageSize: 7 })).result;
      rows.push(...rowsOf(r));
      pages += 1;
    }
    const want = [];
    for (let i = 0; i < 50; i += 1) want.push([`f${String(i).padStart(3, '0')}`, String(i)]);
    check(`${tag} paging`, same(rows, want), show(rows.slice(0, 3)));
    check(`${tag} pages`, pages === 8, String(pages));
    r = (await call('query', { select: [`${base}:size`], pageSize: 3 })).result;
    check(`${tag} token`, Boolean(r.token) && (r.more === true || r.more === 'true'), show(r));
    await call('endQuery', { token: r.token });
    await expectFault(`${tag} nextQuery after endQuery`, 1, () => call('nextQuery', { token: r.token }));
    await expectFault(`${tag} second endQuery`, 1, () => call('endQuery', { token: r.token }));
    // Native SQL, paged like query: the columns are the header names.
    r = (await call('sqlQuery', { statement: `SELECT FILE, size AS s FROM ${base} WHERE size < 10 ORDER BY size DESC`, pageSize: 4 })).result;
    check(`${tag} sqlQuery columns`, same(arr(r.column), ['FILE', 's']), show(r.column));
    const sqlRows = rowsOf(r);
    while (r.more === true || r.more === 'true') {
      r = (await call('nextQuery', { token: r.token, pageSize: 4 })).result;
      sqlRows.push(...rowsOf(r));
    }
    const sqlWant = [];
    for (let i = 9; i >= 0; i -= 1) sqlWant.push([`f${String(i).padStart(3, '0')}`, String(i)]);
    check(`${tag} sqlQuery rows`, same(sqlRows, sqlWant), show(sqlRows.slice(0, 3)));
    await expectFault(`${tag} sqlQuery INSERT`, 8, () => call('sqlQuery', { statement: `INSERT INTO ${base} (FILE) VALUES ('x')` }));
    // Composite indexes.
    await call('indexCreate', { schemaName: base, indexName: 'by_size', attributeName: ['size', 'FILE'] });
    const ix = await call('indexList', { schemaName: base });
    check(`${tag} indexList`, same(arr(ix && ix.index).map((i) => [i.name, arr(i.attributeName)]), [['by_size', ['size', 'FILE']]]), show(ix));
    await expectFault(`${tag} indexCreate exists`, 15, () => call('indexCreate', { schemaName: base, indexName: 'BY_SIZE', attributeName: ['size'] }));
    await call('indexRemove', { schemaName: base, indexName: 'by_size' });
    const none = await call('indexList', { schemaName: base });
    check(`${tag} indexList empty`, arr(none && none.index).length === 0, show(none));
  });

  await step(`${tag} faults`, async () => {
    const e = await expectFault(`${tag} exists`, 16, () => call('createSchema', { schemaName: base }));
    if (e) {
      const f = e.root.Envelope.Body.Fault;
      const code = version === '1.1' ? String(f.faultcode) : String(f.Code && f.Code.Value);
      check(`${tag} fault code`, code.endsWith(version === '1.1' ? 'Client' : 'Sender'), code);
    }
    await expectFault(`${tag} entry exists`, 15, () => call('createEntry', { schemaName: base, entry: [{ name: 'f001' }] }));
    await expectFault(`${tag} not exists`, 1, () => call('getAttributes', { entryName: ['/nope/x'], attributeName: ['a'] }));
    await expectFault(`${tag} no attribute`, 10, () => call('getAttributes', { entryName: [`${base}/f001`], attributeName: ['nosuch'] }));
    await expectFault(`${tag} bad query`, 8, () => call('query', { select: [`${base}:size`], condition: 'size >' }));
    await expectFault(`${tag} forged token`, 8, () => call('nextQuery', { token: 'not-a-token' }));
    await expectFault(`${tag} bad value`, 18, () =>
      call('createEntry', { schemaName: base, entry: [{ name: 'g1', attribute: [{ name: 'size', value: 'x' }] }] }),
    );
    const got = await call('getAttributes', { entryName: [`${base}/g*`], attributeName: ['size'] });
    check(`${tag} nothing created`, arr(got && got.entry).length === 0, show(got));
  });

  await step(`${tag} cleanup`, async () => {
    let removed = await call('removeEntry', { pattern: `${base}/*`, condition: 'size >= 25' });
    check(`${tag} removeEntry(condition)`, Number(removed.removed) === 25, show(removed));
    removed = await call('removeEntry', { pattern: `${base}/*` });
    check(`${tag} removeEntry`, Number(removed.removed) === 25, show(removed));
    await call('dropSchema', { schemaName: base });
    const all = await call('listSchemas');
    check(`${tag} gone`, !arr(all && all.schemaName).includes(base), show(all));
  });
}

function args() {
  const a = process.argv.slice(2);
  const get = (flag, dflt) => {
    const i = a.indexOf(flag);
    return i >= 0 && i + 1 < a.length ? a[i + 1] : dflt;
  };
  const url = get('--url');
  const password = get('--password');
  if (!url || password === undefined) {
    console.error('usage: node_scenario.js --url http://HOST:PORT [--user root] --password PW');
    process.exit(2);
  }
  return { url, user: get('--user', 'root'), password };
}

async function main() {
  const { url, user, password } = args();
  const wsdl = `${url}/soap?wsdl`;
  const c11 = await soap.createClientAsync(wsdl);
  c11.setSecurity(new soap.BasicAuthSecurity(user, password));
  await scenario(c11.MetadataCatalog.MetadataCatalogPort, '11', '1.1');
  const c12 = await soap.createClientAsync(wsdl, { forceSoap12Headers: true });
  c12.setSecurity(new soap.BasicAuthSecurity(user, password));
  await scenario(c12.MetadataCatalog.MetadataCatalogPort12, '12', '1.2');

  // Wrong credentials: refused (HTTP 401 carrying an AuthorizationException fault).
  const bad = await soap.createClientAsync(wsdl);
  bad.setSecurity(new soap.BasicAuthSecurity(user, `${password}-wrong`));
  try {
    await op(bad.MetadataCatalog.MetadataCatalogPort, 'ping', {});
    check('wrong password', false, 'ping succeeded');
  } catch (err) {
    const status = err.response && err.response.status;
    check('wrong password', faultCode(err) === 4 || status === 401, `${err.message} (HTTP ${status})`);
  }

  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.log(`FAIL scenario: ${err && err.stack ? err.stack : err}`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
