import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of Postgres that can lose the reply that ends a transaction: when the
 * server says it is idle again (ReadyForQuery with status I) after a transaction whose statements
 * a rule matches, that is, after its COMMIT or after a statement sent on its own, the proxy
 * closes both connections instead of passing the reply on. The server has committed; the client
 * sees its connection drop and cannot tell whether the commit happened, which is the fault that
 * makes svcsync retry a unit of work that is already in the warehouse.
 *
 * It reads just enough of the protocol to know each statement's text: simple queries ('Q') and
 * the Parse messages ('P') of the extended protocol, which pg sends for statements with
 * parameters. A rule sees every statement sent since the server was last idle.
 */
export interface CutRule {
  /** Whether to lose the reply that ends a transaction (or a statement on its own) that ran these statements. */
  match(statements: readonly string[]): boolean;
  /** How many replies to lose; the rule is spent after that. */
  times: number;
}

export class CommitCuttingProxy {
  /** Replies lost, each with the statements of the transaction (or the statement) they ended. */
  readonly cut: string[][] = [];
  private readonly rules: CutRule[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<CommitCuttingProxy> {
    const accepted: { proxy?: CommitCuttingProxy } = {};
    const server = createServer((client) => accepted.proxy?.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
    accepted.proxy = new CommitCuttingProxy(server, address.port);
    return accepted.proxy;
  }

  /** `url` (a postgres:// URL) through the proxy. */
  through(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Loses the reply that ends the next `times` transactions (or statements on their own) whose statements `match`. */
  cutAfterCommit(match: (statements: readonly string[]) => boolean, times = 1): void {
    this.rules.push({ match, times });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    const server = connect(target.port, target.host);
    // Small messages both ways: without this, Nagle's algorithm holds each for a delayed ACK (about 40 ms).
    client.setNoDelay(true);
    server.setNoDelay(true);
    this.sockets.add(client);
    this.sockets.add(server);
    const end = (): void => {
      client.destroy();
      server.destroy();
      this.sockets.delete(client);
      this.sockets.delete(server);
    };
    client.on('error', end);
    server.on('error', end);
    client.on('close', end);
    server.on('close', end);
    let statements: string[] = [];
    let cut = false;
    // A chunk's messages go on in one write: a write per message (a DataRow each) cost a system
    // call each, seconds of a test's time.
    const toServer: Buffer[] = [];
    const toClient: Buffer[] = [];
    const flush = (socket: Socket, out: Buffer[]): void => {
      if (out.length > 0) socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
      out.length = 0;
    };
    const fromClient = new MessageReader(true, (type, body, raw) => {
      if (type === 'Q') statements.push(cString(body, 0));
      // Parse: the statement's name, then its text.
      else if (type === 'P') statements.push(cString(body, body.indexOf(0) + 1));
      toServer.push(raw);
    });
    const fromServer = new MessageReader(false, (type, body, raw) => {
      if (cut) return;
      // Idle again: whatever the statements since the last idle moment did is committed.
      if (type === 'Z' && body[0] === 0x49) {
        const done = statements;
        statements = [];
        const rule = this.rules.find((r) => r.times > 0 && r.match(done));
        if (rule) {
          rule.times--;
          this.cut.push(done);
          cut = true;
          // What came before the lost reply reaches the client, as it would without the cut.
          flush(client, toClient);
          end();
          return;
        }
      }
      toClient.push(raw);
    });
    client.on('data', (chunk: Buffer) => {
      fromClient.push(chunk);
      flush(server, toServer);
    });
    server.on('data', (chunk: Buffer) => {
      fromServer.push(chunk);
      if (!cut) flush(client, toClient);
    });
  }
}

/** Splits a byte stream into protocol messages: a type byte and a length, or (the client's first) a length alone. */
class MessageReader {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(
    private startup: boolean,
    private readonly onMessage: (type: string, body: Buffer, raw: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const header = this.startup ? 4 : 5;
      if (this.buffer.length < header) return;
      const length = this.buffer.readInt32BE(header - 4);
      const size = length + header - 4;
      if (this.buffer.length < size) return;
      const raw = this.buffer.subarray(0, size);
      this.buffer = this.buffer.subarray(size);
      const type = this.startup ? '' : String.fromCharCode(raw[0]!);
      // The tests' connections ask for no SSL, so the first message is the startup message itself.
      this.startup = false;
      this.onMessage(type, raw.subarray(header), raw);
    }
  }
}

function cString(buffer: Buffer, start: number): string {
  const end = buffer.indexOf(0, start);
  return buffer.toString('utf8', start, end < 0 ? buffer.length : end);
}
