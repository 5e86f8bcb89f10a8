/**
 * The server of the http-client scenario (forked by bench/http-client.ts): on 127.0.0.1, one
 * JSON answer of about each size asked for, built once and served as the same bytes every time,
 * so that the clients' CPU is all that differs between runs and the server takes as little of
 * the two cores as it can. Usage: node dist/bench/http-answer-server.js '<AnswerServerSpec JSON>'
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AnswerServerReady, AnswerServerSpec } from './protocol.js';

/**
 * A page of events as the list endpoints shape one (records, then the page context), grown to
 * at least `kb` KB; about 175 bytes a record, so 35 KB is 200 records, a page at per_page 200.
 */
export function answerOf(kb: number): Buffer {
  const head = '{"code":0,"message":"success","events":[';
  const tail = '],"page_context":{"page":1,"per_page":200,"has_more_page":true,"sort_column":"event_time"}}';
  const records: string[] = [];
  let length = head.length + tail.length;
  for (let i = 0; length < kb * 1024; i++) {
    const record = JSON.stringify({
      event_id: `4600000000${String(i).padStart(9, '0')}`,
      event_type: i % 3 ? 'invoice_updated' : 'invoice_created',
      event_time: `2026-11-20T08:${String(i % 60).padStart(2, '0')}:00+0000`,
      event_source: 'api',
      reference_id: `4600000001${String(i).padStart(9, '0')}`,
      amount: (i * 37.5) % 10_000,
    });
    records.push(record);
    length += record.length + (i ? 1 : 0);
  }
  return Buffer.from(head + records.join(',') + tail);
}

function main(): void {
  const spec = JSON.parse(process.argv[2] ?? '{}') as AnswerServerSpec;
  const answers = new Map(spec.sizesKb.map((kb) => [`/answer/${kb}`, { kb, body: answerOf(kb) }]));
  const server = http.createServer((req, res) => {
    const answer = answers.get(req.url ?? '');
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json;charset=UTF-8', 'Content-Length': answer.body.length });
    res.end(answer.body);
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    const ready: AnswerServerReady = {
      type: 'ready',
      url: `http://127.0.0.1:${port}`,
      answers: [...answers].map(([path, a]) => ({ kb: a.kb, path, bytes: a.body.length })),
    };
    process.send?.(ready);
  });
  // The driver going away (or asking it to stop by disconnecting) takes the server with it.
  process.on('disconnect', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

main();
