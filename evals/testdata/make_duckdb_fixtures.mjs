// make_duckdb_fixtures.mjs writes mmlu_duckdb.parquet and trivia_duckdb.parquet
// with DuckDB's own parquet writer (C++, independent of parquet-go), so the
// reader is checked against a file it did not write. Run with Node.js:
//   npm install @duckdb/node-api@1.5.6-r.1 && node make_duckdb_fixtures.mjs evals/testdata
// DuckDB 1.5.6 wrote the committed files: every column optional, choices a
// three-level LIST, subject dictionary-encoded (PLAIN_DICTIONARY), MMLU
// zstd, TriviaQA snappy with answer a struct of lists.
import { DuckDBInstance } from '@duckdb/node-api';
const out = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
await c.run(`SET threads = 1`);
await c.run(`CREATE TABLE mmlu AS SELECT * FROM (VALUES
 ('Which unit measures electric current?', 'physics', ['volt', 'ampere', 'ohm', 'watt'], 1::BIGINT),
 ('What is the boiling point of water at sea level, in degrees Celsius?', 'physics', ['90', '100', '110', '120'], 1),
 ('Which force keeps the planets in orbit around the Sun?', 'physics', ['friction', 'magnetism', 'gravity', 'tension'], 2),
 ('What is the SI unit of energy?', 'physics', ['joule', 'newton', 'pascal', 'watt'], 0),
 ('Light travels fastest in which medium?', 'physics', ['water', 'glass', 'diamond', 'vacuum'], 3),
 ('Which word is a synonym of "rapid"?', 'english', ['slow', 'quick', 'late', 'calm'], 1),
 ('Which word is the opposite of "ancient"?', 'english', ['modern', 'old', 'antique', 'aged'], 0),
 ('Which of these is a noun?', 'english', ['run', 'blue', 'table', 'quickly'], 2),
 ('Which sentence uses "their" correctly?', 'english', ['Their going home.', 'The dog wagged their tail.', 'Put it over their.', 'They lost their keys.'], 3),
 ('Which word is spelled correctly?', 'english', ['recieve', 'receive', 'receeve', 'recive'], 1)
) t(question, subject, choices, answer)`);
await c.run(`COPY mmlu TO '${out}/mmlu_duckdb.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 4)`);
await c.run(`CREATE TABLE trivia AS SELECT * FROM (VALUES
 ('Which metal is liquid at room temperature?', 'dk_001', {'aliases': ['Mercury', 'Quicksilver', 'Hg'], 'normalized_aliases': ['mercury', 'quicksilver', 'hg'], 'value': 'Mercury', 'normalized_value': 'mercury', 'type': 'WikipediaEntity'}),
 ('How many legs does a spider have?', 'dk_002', {'aliases': ['Eight', '8'], 'normalized_aliases': ['eight', '8'], 'value': 'Eight', 'normalized_value': 'eight', 'type': 'Numerical'}),
 ('What colour do you get by mixing blue and yellow?', 'dk_003', {'aliases': [], 'normalized_aliases': ['green'], 'value': 'Green', 'normalized_value': 'green', 'type': 'FreeForm'})
) t(question, question_id, answer)`);
await c.run(`COPY trivia TO '${out}/trivia_duckdb.parquet' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 2)`);
for (const f of ['mmlu_duckdb', 'trivia_duckdb']) {
  const r = await c.runAndReadAll(`SELECT row_group_id, path_in_schema, type, encodings, compression FROM parquet_metadata('${out}/${f}.parquet')`);
  console.log(f, JSON.stringify(r.getRows(), (k, v) => typeof v === "bigint" ? Number(v) : v));
  const s = await c.runAndReadAll(`SELECT name, type, repetition_type, converted_type FROM parquet_schema('${out}/${f}.parquet')`);
  console.log(f, JSON.stringify(s.getRows(), (k, v) => typeof v === "bigint" ? Number(v) : v));
}
