// make_duckdb_fixture.mjs writes sharegpt_duckdb.parquet with DuckDB's own
// parquet writer (C++, independent of parquet-go), so the workload's parquet
// reader is checked against a file it did not write. Run with Node.js:
//   npm install @duckdb/node-api@1.5.6-r.1 && node make_duckdb_fixture.mjs bench/workload/testdata
// The file holds ShareGPT conversations as the Hub's ShareGPT-format sets
// do: conversations a LIST of STRUCT(from, value), every column optional,
// snappy pages (one row group); sharegpt_duckdb.json beside it holds
// the same conversations as a ShareGPT JSON array. DuckDB 1.5.6 wrote the
// committed files.
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFileSync } from 'node:fs';
const out = process.argv[2];
const convs = [
  { id: 'a1', conversations: [{ from: 'system', value: 'You are terse.' }, { from: 'human', value: 'Name a prime number.' }, { from: 'gpt', value: 'Seven.' }] },
  { id: 'a2', conversations: [{ from: 'human', value: 'What is the capital of France?' }, { from: 'gpt', value: 'Paris is the capital of France.' }, { from: 'human', value: 'And of Spain?' }, { from: 'gpt', value: 'Madrid.' }] },
  { id: 'a3', conversations: [{ from: 'gpt', value: 'Hello, how can I help?' }] },
  { id: 'a4', conversations: [{ from: 'human', value: '  ' }, { from: 'gpt', value: 'Nothing was asked.' }] },
  { id: 'a5', conversations: [{ from: 'human', value: 'Say nothing.' }] },
  { id: 'a6', conversations: [{ from: 'tool', value: '{"ok": true}' }, { from: 'user', value: 'Summarise the tool output.' }, { from: 'assistant', value: 'The tool succeeded.' }] },
  { id: 'a7', conversations: [] },
];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run(`SET threads = 1`);
const esc = (s) => `'${s.replaceAll("'", "''")}'`;
const rows = convs.map((r) => `(${esc(r.id)}, [${r.conversations.map((t) => `{'from': ${esc(t.from)}, 'value': ${esc(t.value)}}`).join(', ')}]::STRUCT("from" VARCHAR, "value" VARCHAR)[])`);
await c.run(`CREATE TABLE sharegpt AS SELECT * FROM (VALUES ${rows.join(',\n')}) t(id, conversations)`);
await c.run(`COPY sharegpt TO '${out}/sharegpt_duckdb.parquet' (FORMAT parquet, COMPRESSION snappy)`);
writeFileSync(`${out}/sharegpt_duckdb.json`, JSON.stringify(convs, null, 1) + '\n');
const r = await c.runAndReadAll(`SELECT row_group_id, path_in_schema, type, compression FROM parquet_metadata('${out}/sharegpt_duckdb.parquet')`);
console.log(JSON.stringify(r.getRows(), (k, v) => typeof v === 'bigint' ? Number(v) : v));
const s = await c.runAndReadAll(`SELECT name, type, repetition_type, converted_type FROM parquet_schema('${out}/sharegpt_duckdb.parquet')`);
console.log(JSON.stringify(s.getRows(), (k, v) => typeof v === 'bigint' ? Number(v) : v));
